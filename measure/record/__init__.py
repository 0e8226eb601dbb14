"""The run record: its JSON Schema, migrations, load and write, the typed views, and results-tree queries."""
