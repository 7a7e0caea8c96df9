"""What the management plane samples from a running node: live connections and channels, message rates,
stream sizes."""
