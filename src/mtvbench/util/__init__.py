"""Small shared mechanisms: atomic files, strict JSON, safe text for every output sink."""
