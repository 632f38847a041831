"""Filter heads (placeholder)."""
