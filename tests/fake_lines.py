"""What the fake plugins of ``tests/fake_failing_plugin.py`` print, importable by tests without registering them."""

#: What ``fake_writes_to_fd2`` writes on file descriptor 2 at each call.
FD2_LINE = "fake C-level line on file descriptor 2"
