"""When Eva answers and how the answer reaches Discord: the reply cog, its gate, access, limits,
cooldown, files, live message and splitting.
"""
