"""A vhost and its objects: creating and deleting queues, exchanges and bindings, dead-lettering,
sender-selected routing, the persistence port, definitions and snapshots; imports every layer below it."""
