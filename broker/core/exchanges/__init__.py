"""Exchanges and routing: the `Exchange` object, its bindings, the router, one module per exchange type
(all implementing `ExchangeType` from `base`) and the topic trie; imports only `model`."""
