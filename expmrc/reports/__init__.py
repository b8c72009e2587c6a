"""Reports: tables and figures over runs and evidence methods."""
