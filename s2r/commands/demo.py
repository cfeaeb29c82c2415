"""`python -m s2r demo` (placeholder until its issue lands)."""


def register(subparsers):
    p = subparsers.add_parser("demo", help="(not implemented yet)")
    p.set_defaults(func=run)


def run(args):
    from s2r.errors import S2RError
    raise S2RError("'demo' is not implemented yet")
