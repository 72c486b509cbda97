"""``python -m dshweb``: the ``dshweb`` command (:mod:`dshweb.site.program`)."""

import sys

from dshweb.site.program import main

sys.exit(main())
