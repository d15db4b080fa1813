"""The fake summarizer and its size model, the prompt-cache simulation and the context check:
shipped, because `eva compact --fake-model` and the benchmarks use them.
"""
