"""Reading DSH's files: the home's session folders, a log's zstd frames, its lines as
typed events.

Nothing here folds or interprets a session: :mod:`.home` finds the logs and their locks,
:mod:`.frames` and :mod:`.reader` tail a log a complete frame at a time, :mod:`.decode`
turns each line into a record of :mod:`.wire` (msgspec :mod:`.structs`, or the stdlib
json module), and :mod:`.jsjson` reads and measures JSON as JavaScript does.
"""
