"""Alert rules on sessions: what each condition reads off a snapshot, and when a rule fires."""
