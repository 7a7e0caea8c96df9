// The RabbitMQ Java client against a WarrenMQ high-availability pair: ConnectionFactory.newConnection(List<Address>)
// with both nodes listed and automatic recovery on, as a Java team would point an application at the pair.
// A publisher sends persistent messages with publisher confirms, one at a time, and sends a message again when
// its confirm is lost with the node (at least once); a consumer on its own connection acks what it gets, except
// a few messages it holds unacked when the active node is killed. The test (tests/ha/test_java_client_failover.py)
// kills the active node when this program prints {"event":"kill"}; at the end the program prints what it saw as
// one JSON line, and the test checks it.
//
// Arguments: the addresses (host:port,host:port), how many messages to confirm, how many before the kill, and
// how many of those just before the kill the consumer holds unacked.

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Address;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.MessageProperties;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

final class HaFailover {
  private HaFailover() {}

  static final String QUEUE = "java-ha";
  static final long WAIT_MS = 60_000;

  /** Each id the consumer got, with how often it came without and with the redelivered flag. */
  static final Map<Integer, int[]> deliveries = new ConcurrentHashMap<>();
  /** The held ids that came back with redelivered=true (and were then acked). */
  static final Set<Integer> heldRedelivered = ConcurrentHashMap.newKeySet();

  static Connection connect(List<Address> addresses, String name, AtomicInteger recoveries) throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setAutomaticRecoveryEnabled(true);
    factory.setTopologyRecoveryEnabled(true);
    // The client's default is 5 s between attempts; a lease of a few seconds makes that the larger part of a
    // failover, and an application that cares sets it lower.
    factory.setNetworkRecoveryInterval(200);
    factory.setConnectionTimeout(5_000);
    Connection conn = factory.newConnection(addresses, name);
    ((Recoverable) conn)
        .addRecoveryListener(
            new RecoveryListener() {
              @Override
              public void handleRecovery(Recoverable recoverable) {
                recoveries.incrementAndGet();
              }

              @Override
              public void handleRecoveryStarted(Recoverable recoverable) {}
            });
    return conn;
  }

  static boolean waitUntil(java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (!condition.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) return false;
      Thread.sleep(20);
    }
    return true;
  }

  public static void main(String[] args) throws Exception {
    List<Address> addresses = new ArrayList<>();
    for (String hostPort : args[0].split(",")) {
      addresses.add(Address.parseAddress(hostPort));
    }
    int total = Integer.parseInt(args[1]);
    int killAfter = Integer.parseInt(args[2]);
    int held = Integer.parseInt(args[3]);
    Set<Integer> holding = new TreeSet<>();
    for (int id = killAfter - held; id < killAfter; id++) holding.add(id);

    AtomicInteger consumerRecoveries = new AtomicInteger();
    Connection consumerConn = connect(addresses, "ha-consumer", consumerRecoveries);
    Channel consumerChannel = consumerConn.createChannel();
    consumerChannel.queueDeclare(QUEUE, true, false, false, null);
    consumerChannel.basicQos(100);
    consumerChannel.basicConsume(
        QUEUE,
        false,
        new DefaultConsumer(consumerChannel) {
          @Override
          public void handleDelivery(
              String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
              throws java.io.IOException {
            int id = Integer.parseInt(new String(body, StandardCharsets.UTF_8));
            deliveries.computeIfAbsent(id, k -> new int[2])[envelope.isRedeliver() ? 1 : 0]++;
            if (holding.contains(id) && !envelope.isRedeliver()) {
              return; // held unacked on the node that is about to be killed
            }
            if (holding.contains(id)) heldRedelivered.add(id);
            // A tag from before a recovery is dropped by the client (its channel was replaced).
            getChannel().basicAck(envelope.getDeliveryTag(), false);
          }
        });

    AtomicInteger publisherRecoveries = new AtomicInteger();
    Connection publisherConn = connect(addresses, "ha-publisher", publisherRecoveries);
    int portBefore = publisherConn.getPort();
    Channel channel = publisherConn.createChannel();
    channel.confirmSelect();
    Set<Integer> confirmed = new TreeSet<>();
    Set<Integer> sentAgain = new TreeSet<>();
    int failedAttempts = 0;
    long killedAt = 0;
    long firstConfirmAfterKill = 0;
    for (int id = 0; id < total; ) {
      try {
        channel.basicPublish(
            "", QUEUE, MessageProperties.PERSISTENT_BASIC, Integer.toString(id).getBytes(StandardCharsets.UTF_8));
        channel.waitForConfirmsOrDie(10_000);
      } catch (Exception lost) {
        // Closed, reset, nacked or timed out: the node went away under us. Send the same id again once the
        // client has recovered (it may then be delivered twice: at least once, as RabbitMQ promises).
        failedAttempts++;
        sentAgain.add(id);
        Thread.sleep(50);
        continue;
      }
      confirmed.add(id);
      if (killedAt != 0 && firstConfirmAfterKill == 0) firstConfirmAfterKill = System.nanoTime();
      id++;
      if (id == killAfter) {
        // Kill only once the consumer holds every message it is to hold: they must come back redelivered.
        if (!waitUntil(() -> holding.stream().allMatch(deliveries::containsKey))) {
          System.out.println(Json.write(Map.of("event", "error", "error", "held messages never arrived")));
          System.exit(1);
        }
        System.out.println(Json.write(Map.of("event", "kill")));
        System.out.flush();
        killedAt = System.nanoTime();
      }
    }
    int portAfter = publisherConn.getPort();
    waitUntil(() -> deliveries.keySet().containsAll(confirmed) && heldRedelivered.containsAll(holding));

    List<Integer> missing = new ArrayList<>();
    for (int id : confirmed) if (!deliveries.containsKey(id)) missing.add(id);
    List<Integer> neverPublished = new ArrayList<>();
    List<Integer> unflaggedDuplicates = new ArrayList<>();
    for (Map.Entry<Integer, int[]> entry : deliveries.entrySet()) {
      if (entry.getKey() < 0 || entry.getKey() >= total) neverPublished.add(entry.getKey());
      // Delivered twice without the flag: only a message its publisher sent twice may be.
      if (entry.getValue()[0] > 1 && !sentAgain.contains(entry.getKey())) unflaggedDuplicates.add(entry.getKey());
    }
    List<Integer> heldNotRedelivered = new ArrayList<>();
    for (int id : holding) if (!heldRedelivered.contains(id)) heldNotRedelivered.add(id);
    int redelivered = 0;
    for (int[] counts : deliveries.values()) redelivered += counts[1];

    Map<String, Object> result = new LinkedHashMap<>();
    result.put("event", "result");
    result.put("confirmed", confirmed.size());
    result.put("delivered", deliveries.size());
    result.put("redelivered", redelivered);
    result.put("missing", missing);
    result.put("never_published", neverPublished);
    result.put("unflagged_duplicates", unflaggedDuplicates);
    result.put("held_not_redelivered", heldNotRedelivered);
    result.put("failed_attempts", failedAttempts);
    result.put("port_before", portBefore);
    result.put("port_after", portAfter);
    result.put("consumer_port_after", consumerConn.getPort());
    result.put("publisher_recoveries", publisherRecoveries.get());
    result.put("consumer_recoveries", consumerRecoveries.get());
    result.put("failover_ms", firstConfirmAfterKill == 0 ? -1 : (firstConfirmAfterKill - killedAt) / 1_000_000);
    System.out.println(Json.write(result));
    System.out.flush();
    publisherConn.close();
    consumerConn.close();
  }
}
