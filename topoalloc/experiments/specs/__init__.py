"""Built-in experiment specs (TOML): the papers `topoalloc reproduce` knows."""
