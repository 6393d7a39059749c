"""Benchmarks: ``python -m bench [NAME ...] [--quick]`` (``make bench``); see bench/README.md."""
