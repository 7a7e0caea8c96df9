"""The pure routing domain: exchanges, bindings, router, queues, consumers, acknowledgements. No I/O, no
pamqp.
"""
