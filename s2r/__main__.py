import sys

from s2r.cli import main

if __name__ == "__main__":
    sys.exit(main())
