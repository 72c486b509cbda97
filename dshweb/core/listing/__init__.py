"""The sessions list: which sessions a query shows, in which order, a page at a time.

:mod:`.query` reads a :class:`~.query.ListQuery` from the page's parameters and says
whether a session matches it; :mod:`.pages` orders the home's sessions (sub-agents under
their parents), filters, sorts and pages them, and counts the whole home by band and by
live/idle. Pure, over the fold's snapshots and gauges: the page, its htmx requests and
its socket all ask the server, so each rule exists once, here.
"""
