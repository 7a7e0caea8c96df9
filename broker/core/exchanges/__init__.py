"""Exchange types: one module per type, all implementing `ExchangeType` from `base`."""
