"""Chat text as the memory keeps it, made safe to frame: names, frame tags, mentions, records and
line helpers. Pure: no SQL, no I/O.
"""
