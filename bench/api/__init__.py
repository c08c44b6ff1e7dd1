"""The plugin API: all a metric author imports (registry decorator, corpus checks, per-text adapter, shared per-corpus work, run context, tokens). It imports nothing of the application."""
