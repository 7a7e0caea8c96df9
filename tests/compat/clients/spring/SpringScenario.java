// The client matrix's Spring AMQP program: spring-rabbit (spring/pom.xml) on a plain Spring context.
// Usage: java SpringScenario AMQP_URL NAME_PREFIX [MANAGEMENT_URL]; prints one JSON observation (see
// tests/compat/clients/README.md).

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.CorrelationData;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.api.ChannelAwareBatchMessageListener;
import org.springframework.amqp.rabbit.transaction.RabbitTransactionManager;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.transaction.support.TransactionTemplate;

public final class SpringScenario {
  private static final int WAIT_S = 5;
  private static AnnotationConfigApplicationContext context;
  private static String prefix;

  interface Body {
    Map<String, Object> run() throws Exception;
  }

  private static Map<String, Object> step(Body body) {
    try {
      return body.run();
    } catch (Exception err) {
      Throwable cause = err;
      while (cause.getCause() != null) cause = cause.getCause();
      Map<String, Object> result = new LinkedHashMap<>();
      result.put("error", err.getClass().getSimpleName() + ": " + cause.getMessage());
      return result;
    }
  }

  private static RabbitTemplate template() {
    return context.getBean(RabbitTemplate.class);
  }

  private static long messageCount(String queue) {
    return context.getBean(RabbitAdmin.class).getQueueInfo(queue).getMessageCount();
  }

  /** RabbitAdmin declared the exchange, the queue and its binding when the context started. */
  private static Map<String, Object> admin() {
    Map<String, Object> result = new LinkedHashMap<>();
    RabbitAdmin admin = context.getBean(RabbitAdmin.class);
    result.put("queue_declared", admin.getQueueInfo(prefix + "-routed") != null);
    template().convertAndSend(prefix + "-x", "k", "hello");
    result.put("routed", template().receiveAndConvert(prefix + "-routed", WAIT_S * 1000));
    return result;
  }

  /** Correlated publisher confirms and returns: one message unroutable (mandatory), one routed. */
  private static Map<String, Object> confirmsAndReturns() throws Exception {
    List<Object> events = new ArrayList<>();
    for (String[] sent : new String[][] {{prefix + "-nowhere", "r1"}, {prefix + "-routed", "m1"}}) {
      CorrelationData correlation = new CorrelationData(sent[1]);
      template().convertAndSend("", sent[0], sent[1], correlation);
      CorrelationData.Confirm confirm = correlation.getFuture().get(WAIT_S, TimeUnit.SECONDS);
      List<Object> event = new ArrayList<>(List.of(correlation.getId(), confirm.ack()));
      if (correlation.getReturned() != null) {
        event.add(correlation.getReturned().getReplyCode());
        event.add(correlation.getReturned().getReplyText());
      }
      events.add(event);
    }
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("events", events);
    return result;
  }

  /** convertSendAndReceive: RabbitTemplate's direct reply-to round trip with the @RabbitListener. */
  private static Map<String, Object> rpc() {
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("reply", template().convertSendAndReceive("", prefix + "-rpc", "ping"));
    return result;
  }

  /** @RabbitListener with manual ack (m2 nacked with requeue once, then acked) and with auto ack. */
  private static Map<String, Object> listeners() throws Exception {
    template().convertAndSend("", prefix + "-manual", "m1");
    template().convertAndSend("", prefix + "-manual", "m2");
    List<Object> manual = new ArrayList<>();
    for (int i = 0; i < 3; i++) manual.add(SpringConfig.MANUAL.poll(WAIT_S, TimeUnit.SECONDS));
    template().convertAndSend("", prefix + "-auto", "a1");
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("manual", manual);
    result.put("auto", SpringConfig.AUTO.poll(WAIT_S, TimeUnit.SECONDS));
    return result;
  }

  /** The retry interceptor tries three times, then rejects without requeue: the message is dead-lettered. */
  private static Map<String, Object> retryToDeadLetter() {
    template().convertAndSend("", prefix + "-retry", "poison");
    Message dead = template().receive(prefix + "-dlq", 3 * WAIT_S * 1000);
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("attempts", SpringConfig.RETRY_ATTEMPTS.get());
    result.put("dead_lettered", dead == null ? null : new String(dead.getBody()));
    result.put("x_death", dead == null ? null : SpringConfig.deathOf(dead));
    return result;
  }

  private static SimpleMessageListenerContainer container(String queue) {
    SimpleMessageListenerContainer container =
        new SimpleMessageListenerContainer(context.getBean(CachingConnectionFactory.class));
    container.setQueueNames(queue);
    container.setReceiveTimeout(200);
    return container;
  }

  /** A listener container with two consumers and a prefetch of 5 consumes ten messages. */
  private static Map<String, Object> concurrency() throws Exception {
    String queue = prefix + "-work";
    BlockingQueue<String> seen = new ArrayBlockingQueue<>(16);
    SimpleMessageListenerContainer container = container(queue);
    container.setConcurrentConsumers(2);
    container.setPrefetchCount(5);
    container.setMessageListener(message -> seen.offer(new String(message.getBody())));
    container.start();
    Map<String, Object> result = new LinkedHashMap<>();
    try {
      for (int i = 0; i < 10; i++) template().convertAndSend("", queue, "w" + i);
      List<String> bodies = new ArrayList<>();
      for (int i = 0; i < 10; i++) bodies.add(seen.poll(WAIT_S, TimeUnit.SECONDS));
      bodies.sort(null);
      result.put("consumed", bodies.size() == 10 && !bodies.contains(null));
      result.put("consumers", context.getBean(RabbitAdmin.class).getQueueInfo(queue).getConsumerCount());
    } finally {
      container.stop();
    }
    return result;
  }

  /**
   * Consumer-side batching: eight messages already queued reach the listener as two batches of four. Reported
   * as the batches' sizes and every body seen, sorted: the template publishes with correlated confirms, and a
   * channel still waiting for confirms is not handed out again, so consecutive sends may go out on two
   * channels, which RabbitMQ does not order between (3.10.8 queued b4 before b3 once).
   */
  private static Map<String, Object> batching() throws Exception {
    String queue = prefix + "-batch";
    for (int i = 0; i < 8; i++) template().convertAndSend("", queue, "b" + i);
    BlockingQueue<List<String>> batches = new ArrayBlockingQueue<>(8);
    SimpleMessageListenerContainer container = container(queue);
    container.setConsumerBatchEnabled(true);
    container.setDeBatchingEnabled(true);
    container.setBatchSize(4);
    container.setPrefetchCount(10);
    container.setMessageListener(
        (ChannelAwareBatchMessageListener)
            (messages, channel) -> {
              List<String> bodies = new ArrayList<>();
              for (Message message : messages) bodies.add(new String(message.getBody()));
              bodies.sort(null);
              batches.offer(bodies);
            });
    container.start();
    Map<String, Object> result = new LinkedHashMap<>();
    try {
      List<Integer> sizes = new ArrayList<>();
      List<String> bodies = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        List<String> batch = batches.poll(WAIT_S, TimeUnit.SECONDS);
        sizes.add(batch == null ? 0 : batch.size());
        if (batch != null) bodies.addAll(batch);
      }
      bodies.sort(null);
      result.put("batch_sizes", sizes);
      result.put("bodies", bodies);
    } finally {
      container.stop();
    }
    result.put("left", messageCount(queue));
    return result;
  }

  /**
   * RabbitTemplate.invoke on a transacted channel commits; a transaction that throws rolls back. A
   * connection factory of its own: a channel in confirm mode cannot be transacted (406 on tx.select).
   */
  private static Map<String, Object> transactions() throws Exception {
    String queue = prefix + "-tx";
    CachingConnectionFactory factory = new CachingConnectionFactory();
    factory.setUri(System.getProperty("amqp.url"));
    try {
      return transactions(factory, queue);
    } finally {
      factory.destroy();
    }
  }

  private static Map<String, Object> transactions(CachingConnectionFactory factory, String queue) {
    RabbitTemplate transacted = new RabbitTemplate(factory);
    transacted.setChannelTransacted(true);
    transacted.invoke(
        operations -> {
          operations.convertAndSend("", queue, "t1");
          operations.convertAndSend("", queue, "t2");
          return null;
        });
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("after_invoke", messageCount(queue));
    TransactionTemplate transaction = new TransactionTemplate(new RabbitTransactionManager(factory));
    try {
      transaction.executeWithoutResult(
          status -> {
            transacted.convertAndSend("", queue, "t3");
            throw new IllegalStateException("roll back");
          });
    } catch (IllegalStateException expected) {
      result.put("rolled_back", expected.getMessage());
    }
    result.put("after_rollback", messageCount(queue));
    return result;
  }

  public static void main(String[] args) {
    System.setProperty("amqp.url", args[0]);
    System.setProperty("prefix", args[1]);
    prefix = args[1];
    Map<String, Object> observation = new LinkedHashMap<>();
    try {
      context = new AnnotationConfigApplicationContext(SpringConfig.class);
      observation.put("admin", step(SpringScenario::admin));
      observation.put("confirms", step(SpringScenario::confirmsAndReturns));
      observation.put("rpc", step(SpringScenario::rpc));
      observation.put("listeners", step(SpringScenario::listeners));
      observation.put("retry", step(SpringScenario::retryToDeadLetter));
      observation.put("concurrency", step(SpringScenario::concurrency));
      observation.put("batching", step(SpringScenario::batching));
      observation.put("transactions", step(SpringScenario::transactions));
      RabbitAdmin admin = context.getBean(RabbitAdmin.class);
      for (String queue : List.of("routed", "manual", "auto", "dlq", "retry", "work", "batch", "tx")) {
        admin.deleteQueue(prefix + "-" + queue);
      }
      context.close();
    } catch (Exception err) {
      observation.put("error", err.toString());
    }
    System.out.println(Json.write(observation));
    System.exit(0);
  }
}
