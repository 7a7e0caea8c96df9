// The client matrix's Java program: the RabbitMQ Java client, the current one from Maven Central (pom.xml) and
// Debian's librabbitmq-client-java 5.0.0, the same source for both.
// Usage: java Scenario AMQP_URL NAME_PREFIX MANAGEMENT_URL; prints one JSON observation (see
// tests/compat/clients/README.md).

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

public final class Scenario {
  static final int WAIT_S = 5;
  static String url;
  static String prefix;
  static String managementUrl;

  interface Body {
    Map<String, Object> run(Connection conn) throws Exception;
  }

  static Connection connect(int heartbeatS) throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(url);
    factory.setRequestedHeartbeat(heartbeatS);
    factory.setConnectionTimeout(WAIT_S * 1000);
    factory.setAutomaticRecoveryEnabled(false);
    return factory.newConnection();
  }

  static Map<String, Object> error(Throwable err) {
    // The client wraps a server's close in an IOException whose message is null: report the cause.
    while (err.getMessage() == null && err.getCause() != null) err = err.getCause();
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("error", err.getClass().getSimpleName() + ": " + err.getMessage());
    return result;
  }

  /** Each step has its own connection, so that a failure in one cannot hide the others. */
  static Map<String, Object> step(Body body) {
    Connection conn = null;
    try {
      conn = connect(0);
      return body.run(conn);
    } catch (Exception err) {
      return error(err);
    } finally {
      if (conn != null && conn.isOpen()) {
        try {
          conn.close(WAIT_S * 1000);
        } catch (Exception ignored) {
          conn.abort();
        }
      }
    }
  }

  static String text(byte[] body) {
    return new String(body, StandardCharsets.UTF_8);
  }

  private static Map<String, Object> channelOpenClose(Connection conn) throws Exception {
    Channel first = conn.createChannel();
    first.close();
    Channel second = conn.createChannel();
    AMQP.Queue.DeclareOk ok = second.queueDeclare();
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("first_closed", !first.isOpen());
    result.put("second_open", second.isOpen() && ok.getMessageCount() == 0);
    return result;
  }

  private static Map<String, Object> confirmsWithReturns(Connection conn) throws Exception {
    String queue = prefix + "-confirms";
    Channel ch = conn.createChannel();
    ch.queueDeclare(queue, false, true, false, null);
    ch.confirmSelect();
    List<List<Object>> events = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch acked = new CountDownLatch(1);
    ch.addReturnListener(
        (code, replyText, exchange, routingKey, props, body) ->
            events.add(List.of("return", code, replyText, exchange, routingKey, text(body))));
    ch.addConfirmListener(
        new ConfirmListener() {
          public void handleAck(long tag, boolean multiple) {
            events.add(List.of("ack", tag, multiple));
            if (tag == 3) acked.countDown();
          }

          public void handleNack(long tag, boolean multiple) {
            events.add(List.of("nack", tag, multiple));
          }
        });
    ch.basicPublish("", prefix + "-nowhere", true, null, "r1".getBytes(StandardCharsets.UTF_8));
    ch.basicPublish("", prefix + "-nowhere", true, null, "r2".getBytes(StandardCharsets.UTF_8));
    ch.basicPublish("", queue, true, null, "m1".getBytes(StandardCharsets.UTF_8));
    Map<String, Object> result = new LinkedHashMap<>();
    if (!acked.await(WAIT_S, TimeUnit.SECONDS)) result.put("error", "timeout: confirms");
    result.put("events", new ArrayList<>(events));
    return result;
  }

  private static Map<String, Object> consumeAckNackReject(Connection conn) throws Exception {
    String queue = prefix + "-consume";
    Channel ch = conn.createChannel();
    ch.queueDeclare(queue, false, true, false, null);
    ch.confirmSelect();
    for (String body : List.of("a", "b", "c")) {
      ch.basicPublish("", queue, null, body.getBytes(StandardCharsets.UTF_8));
    }
    ch.waitForConfirmsOrDie(WAIT_S * 1000);
    ch.basicQos(10);
    List<List<Object>> deliveries = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch done = new CountDownLatch(1);
    String tag =
        ch.basicConsume(
            queue,
            false,
            new DefaultConsumer(ch) {
              @Override
              public void handleDelivery(
                  String consumerTag, Envelope env, AMQP.BasicProperties props, byte[] bytes)
                  throws java.io.IOException {
                String body = text(bytes);
                deliveries.add(List.of(body, env.isRedeliver()));
                if (body.equals("a")) {
                  ch.basicAck(env.getDeliveryTag(), false);
                } else if (body.equals("b")) {
                  ch.basicNack(env.getDeliveryTag(), false, false);
                } else if (!env.isRedeliver()) {
                  ch.basicReject(env.getDeliveryTag(), true);
                } else {
                  ch.basicAck(env.getDeliveryTag(), false);
                  done.countDown();
                }
              }
            });
    Map<String, Object> result = new LinkedHashMap<>();
    if (!done.await(WAIT_S, TimeUnit.SECONDS)) result.put("error", "timeout: deliveries");
    ch.basicCancel(tag);
    result.put("deliveries", new ArrayList<>(deliveries));
    result.put("message_count", ch.queueDeclarePassive(queue).getMessageCount());
    return result;
  }

  private static Map<String, Object> directReplyTo(Connection conn) throws Exception {
    String queue = prefix + "-rpc";
    Channel server = conn.createChannel();
    server.queueDeclare(queue, false, true, false, null);
    Map<String, Object> result = new LinkedHashMap<>();
    server.basicConsume(
        queue,
        true,
        new DefaultConsumer(server) {
          @Override
          public void handleDelivery(
              String consumerTag, Envelope env, AMQP.BasicProperties props, byte[] bytes)
              throws java.io.IOException {
            String replyTo = props.getReplyTo();
            result.put(
                "prefix",
                replyTo.startsWith("amq.rabbitmq.reply-to.") ? "amq.rabbitmq.reply-to." : replyTo);
            // RabbitMQ answers a passive declare of the pseudo-queue's name with declare-ok.
            Channel probe = conn.createChannel();
            try {
              probe.queueDeclarePassive(replyTo);
              result.put("passive_declare", "declare-ok");
              probe.close();
            } catch (Exception err) {
              result.put("passive_declare", error(err.getCause() == null ? err : err.getCause()).get("error"));
            } catch (Throwable err) {
              result.put("passive_declare", err.toString());
            }
            AMQP.BasicProperties reply =
                new AMQP.BasicProperties.Builder().correlationId(props.getCorrelationId()).build();
            server.basicPublish("", replyTo, reply, "pong".getBytes(StandardCharsets.UTF_8));
          }
        });
    Channel client = conn.createChannel();
    BlockingQueue<List<String>> replies = new ArrayBlockingQueue<>(1);
    client.basicConsume(
        "amq.rabbitmq.reply-to",
        true,
        new DefaultConsumer(client) {
          @Override
          public void handleDelivery(
              String consumerTag, Envelope env, AMQP.BasicProperties props, byte[] bytes) {
            replies.offer(List.of(text(bytes), props.getCorrelationId()));
          }
        });
    AMQP.BasicProperties request =
        new AMQP.BasicProperties.Builder()
            .replyTo("amq.rabbitmq.reply-to")
            .correlationId("c1")
            .build();
    client.basicPublish("", queue, request, "ping".getBytes(StandardCharsets.UTF_8));
    List<String> reply = replies.poll(WAIT_S, TimeUnit.SECONDS);
    if (reply == null) {
      result.put("error", "timeout: reply");
    } else {
      result.put("reply", reply.get(0));
      result.put("correlation_id", reply.get(1));
    }
    return result;
  }

  private static Map<String, Object> heartbeats() {
    Connection conn = null;
    Map<String, Object> result = new LinkedHashMap<>();
    try {
      conn = connect(1);
      result.put("negotiated", conn.getHeartbeat());
      Thread.sleep(3500);
      Channel ch = conn.createChannel();
      AMQP.Queue.DeclareOk ok = ch.queueDeclare();
      result.put("alive", conn.isOpen() && ok.getMessageCount() == 0);
    } catch (Exception err) {
      result.putAll(error(err));
    } finally {
      if (conn != null) conn.abort(WAIT_S * 1000);
    }
    return result;
  }

  private static Map<String, Object> refusedPublish(Connection conn) throws Exception {
    Channel ch = conn.createChannel();
    BlockingQueue<ShutdownSignalException> closed = new ArrayBlockingQueue<>(1);
    ch.addShutdownListener(closed::offer);
    ch.basicPublish(prefix + "-missing", "k", null, "x".getBytes(StandardCharsets.UTF_8));
    ShutdownSignalException signal = closed.poll(WAIT_S, TimeUnit.SECONDS);
    Map<String, Object> result = new LinkedHashMap<>();
    if (signal == null) {
      result.put("error", "timeout: channel.close");
      return result;
    }
    Map<String, Object> reason = new LinkedHashMap<>();
    reason.put("hard_error", signal.isHardError());
    reason.put("initiated_by_application", signal.isInitiatedByApplication());
    if (signal.getReason() instanceof AMQP.Channel.Close) {
      AMQP.Channel.Close close = (AMQP.Channel.Close) signal.getReason();
      reason.put("code", close.getReplyCode());
      reason.put("text", close.getReplyText());
      reason.put("class_id", close.getClassId());
      reason.put("method_id", close.getMethodId());
    } else {
      reason.put("reason", String.valueOf(signal.getReason()));
    }
    result.put("error", reason);
    conn.createChannel().queueDeclare();
    result.put("channel_closed", !ch.isOpen());
    result.put("connection_open", conn.isOpen());
    return result;
  }

  public static void main(String[] args) {
    url = args[0];
    prefix = args[1];
    managementUrl = args[2];
    Map<String, Object> observation = new LinkedHashMap<>();
    observation.put("channel", step(Scenario::channelOpenClose));
    observation.put("confirms", step(Scenario::confirmsWithReturns));
    observation.put("consume", step(Scenario::consumeAckNackReject));
    observation.put("direct_reply_to", step(Scenario::directReplyTo));
    observation.put("heartbeats", heartbeats());
    observation.put("refused", step(Scenario::refusedPublish));
    observation.put("recovery", Recovery.automaticRecovery());
    observation.put("failover", Recovery.addressFailover());
    observation.put("nio", Recovery.nio());
    System.out.println(Json.write(observation));
    System.exit(0);
  }
}
