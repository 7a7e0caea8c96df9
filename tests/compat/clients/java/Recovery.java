// The client matrix's Java scenarios beyond the common list: automatic connection recovery after the
// management API closes the connection, failover across a list of addresses, and the NIO transport.

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Address;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import com.rabbitmq.client.ShutdownSignalException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

final class Recovery {
  private Recovery() {}

  private static ConnectionFactory factory() throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(Scenario.url);
    factory.setConnectionTimeout(Scenario.WAIT_S * 1000);
    factory.setAutomaticRecoveryEnabled(false);
    return factory;
  }

  private static void closeQuietly(Connection conn) {
    if (conn != null) conn.abort(Scenario.WAIT_S * 1000);
  }

  /** DELETE /api/connections/NAME: the broker closes the connection with 320 CONNECTION_FORCED. */
  private static int closeFromManagement(Connection conn, Socket socket) throws Exception {
    String host = conn.getAddress().getHostAddress();
    // RabbitMQ names a connection "client-ip:port -> server-ip:port".
    String name = host + ":" + socket.getLocalPort() + " -> " + host + ":" + conn.getPort();
    String path = "/api/connections/" + URLEncoder.encode(name, "UTF-8").replace("+", "%20");
    HttpURLConnection http = (HttpURLConnection) new URI(Scenario.managementUrl + path).toURL().openConnection();
    http.setRequestMethod("DELETE");
    String credentials = Base64.getEncoder().encodeToString("guest:guest".getBytes(StandardCharsets.UTF_8));
    http.setRequestProperty("Authorization", "Basic " + credentials);
    http.setConnectTimeout(Scenario.WAIT_S * 1000);
    http.setReadTimeout(Scenario.WAIT_S * 1000);
    int status = http.getResponseCode();
    http.disconnect();
    return status;
  }

  /**
   * RabbitMQ's management plugin lists a connection once its first statistics are emitted (every 5 s by
   * default), and answers 404 until then: retry a bounded number of times.
   */
  private static int closeFromManagementWhenListed(Connection conn, Socket socket) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3 * Scenario.WAIT_S);
    int status = closeFromManagement(conn, socket);
    while (status == 404 && System.nanoTime() < deadline) {
      Thread.sleep(100);
      status = closeFromManagement(conn, socket);
    }
    return status;
  }

  /**
   * The client recovers the connection, its channel, its exchange, queue and binding and its consumer after
   * the broker closes the connection; a message published after recovery reaches the same consumer.
   */
  static Map<String, Object> automaticRecovery() {
    Map<String, Object> result = new LinkedHashMap<>();
    Connection conn = null;
    try {
      ConnectionFactory factory = factory();
      factory.setAutomaticRecoveryEnabled(true);
      factory.setTopologyRecoveryEnabled(true);
      factory.setNetworkRecoveryInterval(200);
      // The connection's local port names it in the management API; the Connection does not tell it.
      AtomicReference<Socket> socket = new AtomicReference<>();
      factory.setSocketConfigurator(
          plain -> {
            plain.setTcpNoDelay(true);
            socket.compareAndSet(null, plain);
          });
      conn = factory.newConnection();
      String exchange = Scenario.prefix + "-recovery-x";
      String queue = Scenario.prefix + "-recovery-q";
      Channel ch = conn.createChannel();
      ch.exchangeDeclare(exchange, "direct", false, true, null);
      // Exclusive: the broker deletes it with the connection, so only topology recovery can bring it back.
      ch.queueDeclare(queue, false, true, false, null);
      ch.queueBind(queue, exchange, "k");
      BlockingQueue<String> bodies = new ArrayBlockingQueue<>(4);
      String tag =
          ch.basicConsume(
              queue,
              true,
              new DefaultConsumer(ch) {
                @Override
                public void handleDelivery(
                    String consumerTag, Envelope env, AMQP.BasicProperties props, byte[] body) {
                  bodies.offer(Scenario.text(body));
                }
              });
      ch.basicPublish(exchange, "k", null, "before".getBytes(StandardCharsets.UTF_8));
      List<Object> received = new ArrayList<>();
      received.add(bodies.poll(Scenario.WAIT_S, TimeUnit.SECONDS));
      BlockingQueue<ShutdownSignalException> closed = new ArrayBlockingQueue<>(1);
      conn.addShutdownListener(closed::offer);
      CountDownLatch recovered = new CountDownLatch(1);
      ((Recoverable) conn)
          .addRecoveryListener(
              new RecoveryListener() {
                public void handleRecovery(Recoverable recoverable) {
                  recovered.countDown();
                }

                public void handleRecoveryStarted(Recoverable recoverable) {}
              });
      result.put("management_delete", closeFromManagementWhenListed(conn, socket.get()));
      ShutdownSignalException signal = closed.poll(Scenario.WAIT_S, TimeUnit.SECONDS);
      if (signal == null) {
        result.put("close", "timeout: connection.close");
      } else {
        Map<String, Object> close = new LinkedHashMap<>();
        close.put("hard_error", signal.isHardError());
        close.put("initiated_by_application", signal.isInitiatedByApplication());
        if (signal.getReason() instanceof AMQP.Connection.Close) {
          AMQP.Connection.Close reason = (AMQP.Connection.Close) signal.getReason();
          close.put("code", reason.getReplyCode());
          close.put("text", reason.getReplyText());
        }
        result.put("close", close);
      }
      result.put("recovered", recovered.await(2 * Scenario.WAIT_S, TimeUnit.SECONDS));
      ch.basicPublish(exchange, "k", null, "after".getBytes(StandardCharsets.UTF_8));
      received.add(bodies.poll(Scenario.WAIT_S, TimeUnit.SECONDS));
      result.put("deliveries", received);
      result.put("connection_open", conn.isOpen());
      result.put("channel_open", ch.isOpen());
      // The recovered consumer keeps its tag; the queue was declared anew and has it as its one consumer.
      result.put("consumers", ch.queueDeclarePassive(queue).getConsumerCount());
      ch.basicCancel(tag);
      ch.exchangeDelete(exchange);
    } catch (Exception err) {
      result.putAll(Scenario.error(err));
    } finally {
      closeQuietly(conn);
    }
    return result;
  }

  /** A port that refuses connections: one the kernel just handed out and that nothing listens on now. */
  private static int refusingPort() throws Exception {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  /** newConnection(List<Address>): the first address refuses, the client connects to the second. */
  static Map<String, Object> addressFailover() {
    Map<String, Object> result = new LinkedHashMap<>();
    Connection conn = null;
    try {
      ConnectionFactory factory = factory();
      Address broker = new Address(factory.getHost(), factory.getPort());
      Address refusing = new Address("127.0.0.1", refusingPort());
      conn = factory.newConnection(List.of(refusing, broker));
      result.put("connected_to_broker", conn.getPort() == broker.getPort());
      result.put("queue_declared", conn.createChannel().queueDeclare().getMessageCount() == 0);
    } catch (Exception err) {
      result.putAll(Scenario.error(err));
    } finally {
      closeQuietly(conn);
    }
    return result;
  }

  /** The NIO transport: a confirmed publish and a basic.get on one connection. */
  static Map<String, Object> nio() {
    Map<String, Object> result = new LinkedHashMap<>();
    Connection conn = null;
    try {
      ConnectionFactory factory = factory();
      factory.useNio();
      conn = factory.newConnection();
      Channel ch = conn.createChannel();
      String queue = Scenario.prefix + "-nio";
      ch.queueDeclare(queue, false, true, false, null);
      ch.confirmSelect();
      List<String> bodies = Collections.synchronizedList(new ArrayList<>());
      for (String body : List.of("n1", "n2")) {
        ch.basicPublish("", queue, null, body.getBytes(StandardCharsets.UTF_8));
      }
      result.put("confirmed", ch.waitForConfirms(Scenario.WAIT_S * 1000));
      for (int i = 0; i < 3; i++) {
        GetResponse got = ch.basicGet(queue, true);
        bodies.add(got == null ? null : Scenario.text(got.getBody()));
      }
      result.put("got", bodies);
    } catch (Exception err) {
      result.putAll(Scenario.error(err));
    } finally {
      closeQuietly(conn);
    }
    return result;
  }
}
