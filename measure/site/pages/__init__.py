"""One builder per page: each arranges values computed upstream into its typed context."""
