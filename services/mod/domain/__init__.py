"""The rules of hip-0528 as pure functions: manifests, activation, the surface, patches,
composition, drafts and review."""
