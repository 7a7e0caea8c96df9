# The client matrix's Ruby program: Bunny (Debian's ruby-bunny).
# Usage: ruby scenario.rb AMQP_URL NAME_PREFIX; prints one JSON observation (see tests/compat/clients/README.md).
require "bunny"
require "json"
require "logger"
require "timeout"

URL, PREFIX = ARGV
WAIT_S = 5

def connect(heartbeat)
  conn = Bunny.new(URL, heartbeat: heartbeat, automatically_recover: false, logger: Logger.new(IO::NULL),
                        connection_timeout: WAIT_S, continuation_timeout: WAIT_S * 1000)
  conn.start
end

def error(err)
  { "error" => "#{err.class}: #{err.message}" }
end

# Waits up to WAIT_S for the block to hold.
def eventually
  deadline = Time.now + WAIT_S
  sleep 0.01 until yield || Time.now > deadline
  yield
end

# Each step has its own connection, so that a failure in one cannot hide the others.
def step
  conn = connect(0)
  Timeout.timeout(3 * WAIT_S) { yield conn }
rescue StandardError, Timeout::Error => e
  error(e)
ensure
  conn&.close if conn&.open?
end

def channel_open_close(conn)
  first = conn.create_channel
  first.close
  second = conn.create_channel
  ok = second.queue_declare("", exclusive: true)
  { "first_closed" => first.closed?, "second_open" => second.open? && ok.message_count.zero? }
end

def confirms_with_returns(conn)
  queue = "#{PREFIX}-confirms"
  ch = conn.create_channel
  ch.queue_declare(queue, exclusive: true)
  events = []
  lock = Mutex.new
  # Bunny's reader thread calls both the return handler and the confirm callback, in frame order.
  ch.confirm_select(->(tag, multiple, nack) { lock.synchronize { events << [nack ? "nack" : "ack", tag] } })
  # One exchange object: each call of default_exchange registers a new one, and only that one sees returns.
  exchange = ch.default_exchange
  exchange.on_return do |info, _props, body|
    lock.synchronize { events << ["return", info.reply_code, info.reply_text, info.exchange, info.routing_key, body] }
  end
  exchange.publish("r1", routing_key: "#{PREFIX}-nowhere", mandatory: true)
  exchange.publish("r2", routing_key: "#{PREFIX}-nowhere", mandatory: true)
  exchange.publish("m1", routing_key: queue, mandatory: true)
  result = {}
  result["error"] = "timeout: confirms" unless eventually { lock.synchronize { events.count { |e| e[0] == "ack" } == 3 } }
  result.merge("events" => lock.synchronize { events.dup })
end

def consume_ack_nack_reject(conn)
  queue = "#{PREFIX}-consume"
  ch = conn.create_channel
  ch.queue_declare(queue, exclusive: true)
  ch.confirm_select
  %w[a b c].each { |body| ch.default_exchange.publish(body, routing_key: queue) }
  raise "publish nacked" unless ch.wait_for_confirms
  ch.prefetch(10)
  deliveries = []
  done = Queue.new
  consumer = ch.basic_consume(queue, "ctag", false) do |info, _props, body|
    deliveries << [body, info.redelivered?]
    if body == "a" then ch.ack(info.delivery_tag)
    elsif body == "b" then ch.nack(info.delivery_tag, false, false)
    elsif !info.redelivered? then ch.reject(info.delivery_tag, true)
    else
      ch.ack(info.delivery_tag)
      done << true
    end
  end
  result = {}
  result["error"] = "timeout: deliveries" unless eventually { !done.empty? }
  ch.basic_cancel(consumer.consumer_tag)
  result.merge("deliveries" => deliveries.dup, "message_count" => ch.queue_declare(queue, passive: true).message_count)
end

def direct_reply_to(conn)
  queue = "#{PREFIX}-rpc"
  server = conn.create_channel
  server.queue_declare(queue, exclusive: true)
  result = {}
  server.basic_consume(queue, "", true) do |_info, props, _body|
    reply_to = props.reply_to
    result["prefix"] = reply_to.start_with?("amq.rabbitmq.reply-to.") ? "amq.rabbitmq.reply-to." : reply_to
    # RabbitMQ answers a passive declare of the pseudo-queue's name with declare-ok.
    probe = conn.create_channel
    begin
      probe.queue_declare(reply_to, passive: true)
      result["passive_declare"] = "declare-ok"
      probe.close
    rescue StandardError => e
      result["passive_declare"] = error(e)["error"]
    end
    server.default_exchange.publish("pong", routing_key: reply_to, correlation_id: props.correlation_id)
  end
  client = conn.create_channel
  replies = Queue.new
  client.basic_consume("amq.rabbitmq.reply-to", "", true) { |_info, props, body| replies << [body, props.correlation_id] }
  client.default_exchange.publish("ping", routing_key: queue, reply_to: "amq.rabbitmq.reply-to", correlation_id: "c1")
  return result.merge("error" => "timeout: reply") unless eventually { !replies.empty? }

  body, correlation_id = replies.pop
  result.merge("reply" => body, "correlation_id" => correlation_id)
end

def heartbeats
  conn = connect(1)
  result = { "negotiated" => conn.heartbeat }
  sleep 3.5
  ok = conn.create_channel.queue_declare("", exclusive: true)
  result.merge("alive" => conn.open? && ok.message_count.zero?)
rescue StandardError => e
  (result || {}).merge(error(e))
ensure
  conn&.close if conn&.open?
end

def refused_publish(conn)
  ch = conn.create_channel
  ch.basic_publish("x", "#{PREFIX}-missing", "k")
  return { "error" => "timeout: channel.close" } unless eventually { ch.closed? }

  # Bunny raises the exception it built from channel.close on the next synchronous call that waits for a reply,
  # or ChannelAlreadyClosed when the close came first, as here; the built exception is the one to look at.
  err = ch.instance_variable_get(:@last_channel_error)
  close = err.channel_close
  conn.create_channel.queue_declare("", exclusive: true)
  {
    "error" => { "class" => err.class.name, "message" => err.message, "code" => close.reply_code,
                 "class_id" => close.class_id, "method_id" => close.method_id },
    "channel_closed" => ch.closed?, "connection_open" => conn.open?
  }
end

observation = {
  "channel" => step { |c| channel_open_close(c) },
  "confirms" => step { |c| confirms_with_returns(c) },
  "consume" => step { |c| consume_ack_nack_reject(c) },
  "direct_reply_to" => step { |c| direct_reply_to(c) },
  "heartbeats" => heartbeats,
  "refused" => step { |c| refused_publish(c) }
}
puts JSON.generate(observation)
