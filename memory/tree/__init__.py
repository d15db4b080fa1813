"""The binary tree's rules: node math, the row, its byte bound, the swap, and how a line is
rendered. Pure: no SQL, no I/O.
"""
