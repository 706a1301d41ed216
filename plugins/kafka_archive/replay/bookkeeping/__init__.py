"""bookkeeping."""
