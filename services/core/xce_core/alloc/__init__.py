"""Allocation (Reqs 2-4): plan iterators, host iterators, and the primary allocators."""
