"""`python -m s2r score` (placeholder until its issue lands)."""


def register(subparsers):
    p = subparsers.add_parser("score", help="(not implemented yet)")
    p.set_defaults(func=run)


def run(args):
    from s2r.errors import S2RError
    raise S2RError("'score' is not implemented yet")
