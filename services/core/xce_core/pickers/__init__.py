"""Job pickers (Req 1): one module per picker, each holding one plugin class."""
