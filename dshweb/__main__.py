"""``python -m dshweb``: the ``dshweb`` command (:mod:`dshweb.site.program`)."""

import sys

from dshweb.site.program import main

if __name__ == "__main__":  # guarded: a spawned worker (core/fold/spread.py) may import it
    sys.exit(main())
