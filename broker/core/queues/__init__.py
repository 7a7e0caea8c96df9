"""Classic and quorum queues: ready messages, consumers, unacked deliveries, settings from arguments and
policies, length limits, priorities, paging; imports only `model`."""
