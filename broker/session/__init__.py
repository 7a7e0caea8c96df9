"""AMQP semantics per connection and channel: frames in, core operations, frames out. No I/O."""
