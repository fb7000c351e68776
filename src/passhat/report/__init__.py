"""Reports: terminal tables (and, later, HTML)."""
