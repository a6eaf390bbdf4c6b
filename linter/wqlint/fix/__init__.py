"""Fixes: findings -> edits -> unified diffs, atomic writes, a semantic patch, a patch series."""
