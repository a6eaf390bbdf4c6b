"""wqlint: find misuse of the Linux kernel's alloc_workqueue() max_active and flags."""

__version__ = "0.1.0"
