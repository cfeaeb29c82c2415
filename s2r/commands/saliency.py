"""`python -m s2r saliency` (placeholder until its issue lands)."""


def register(subparsers):
    p = subparsers.add_parser("saliency", help="(not implemented yet)")
    p.set_defaults(func=run)


def run(args):
    from s2r.errors import S2RError
    raise S2RError("'saliency' is not implemented yet")
