"""`python -m s2r info` (placeholder until its issue lands)."""


def register(subparsers):
    p = subparsers.add_parser("info", help="(not implemented yet)")
    p.set_defaults(func=run)


def run(args):
    from s2r.errors import S2RError
    raise S2RError("'info' is not implemented yet")
