// The Spring AMQP program's application context: what RabbitAdmin declares at start, the templates and the
// @RabbitListener methods. Names come from the system property "prefix" (the test's name prefix).

import com.rabbitmq.client.Channel;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.amqp.core.Binding;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.DirectExchange;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.annotation.EnableRabbit;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.RetryInterceptorBuilder;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.retry.RejectAndDontRequeueRecoverer;
import org.springframework.amqp.support.AmqpHeaders;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.messaging.handler.annotation.Header;

@Configuration
@EnableRabbit
public class SpringConfig {
  static String prefix() {
    return System.getProperty("prefix");
  }

  // What the listeners saw, read by SpringScenario.
  static final BlockingQueue<List<Object>> MANUAL = new ArrayBlockingQueue<>(16);
  static final BlockingQueue<String> AUTO = new ArrayBlockingQueue<>(16);
  static final AtomicInteger RETRY_ATTEMPTS = new AtomicInteger();

  @Bean
  public CachingConnectionFactory connectionFactory() throws Exception {
    CachingConnectionFactory factory = new CachingConnectionFactory();
    factory.setUri(System.getProperty("amqp.url"));
    factory.setPublisherConfirmType(CachingConnectionFactory.ConfirmType.CORRELATED);
    factory.setPublisherReturns(true);
    factory.setConnectionTimeout(5000);
    return factory;
  }

  @Bean
  public RabbitAdmin rabbitAdmin(CachingConnectionFactory factory) {
    return new RabbitAdmin(factory);
  }

  @Bean
  public RabbitTemplate rabbitTemplate(CachingConnectionFactory factory) {
    RabbitTemplate template = new RabbitTemplate(factory);
    template.setMandatory(true);
    template.setReplyTimeout(5000);
    template.setReceiveTimeout(5000);
    return template;
  }

  // RabbitAdmin declares these at start: an exchange, queues and a binding.
  @Bean
  public DirectExchange exchange() {
    return new DirectExchange(prefix() + "-x", false, true);
  }

  @Bean
  public Queue routedQueue() {
    return QueueBuilder.nonDurable(prefix() + "-routed").build();
  }

  @Bean
  public Binding routedBinding() {
    return BindingBuilder.bind(routedQueue()).to(exchange()).with("k");
  }

  @Bean
  public Queue rpcQueue() {
    return QueueBuilder.nonDurable(prefix() + "-rpc").autoDelete().build();
  }

  @Bean
  public Queue manualQueue() {
    return QueueBuilder.nonDurable(prefix() + "-manual").build();
  }

  @Bean
  public Queue autoQueue() {
    return QueueBuilder.nonDurable(prefix() + "-auto").build();
  }

  @Bean
  public Queue deadLetters() {
    return QueueBuilder.nonDurable(prefix() + "-dlq").build();
  }

  @Bean
  public Queue retryQueue() {
    return QueueBuilder.nonDurable(prefix() + "-retry")
        .deadLetterExchange("")
        .deadLetterRoutingKey(prefix() + "-dlq")
        .build();
  }

  @Bean
  public Queue workQueue() {
    return QueueBuilder.nonDurable(prefix() + "-work").build();
  }

  @Bean
  public Queue batchQueue() {
    return QueueBuilder.nonDurable(prefix() + "-batch").build();
  }

  @Bean
  public Queue txQueue() {
    return QueueBuilder.nonDurable(prefix() + "-tx").build();
  }

  @Bean
  public SimpleRabbitListenerContainerFactory rabbitListenerContainerFactory(CachingConnectionFactory factory) {
    SimpleRabbitListenerContainerFactory containers = new SimpleRabbitListenerContainerFactory();
    containers.setConnectionFactory(factory);
    return containers;
  }

  /** Three attempts in the listener (two retries), then RejectAndDontRequeueRecoverer: the queue dead-letters it. */
  @Bean
  public SimpleRabbitListenerContainerFactory retryingFactory(CachingConnectionFactory factory) {
    SimpleRabbitListenerContainerFactory containers = new SimpleRabbitListenerContainerFactory();
    containers.setConnectionFactory(factory);
    containers.setAdviceChain(
        RetryInterceptorBuilder.stateless()
            .maxRetries(2)
            .backOffOptions(10, 1.0, 10)
            .recoverer(new RejectAndDontRequeueRecoverer())
            .build());
    return containers;
  }

  @RabbitListener(queues = "${prefix}-rpc")
  public String answer(String request) {
    return "pong:" + request;
  }

  @RabbitListener(queues = "${prefix}-manual", ackMode = "MANUAL")
  public void manual(
      Message message, Channel channel, @Header(AmqpHeaders.DELIVERY_TAG) long tag) throws IOException {
    String body = new String(message.getBody());
    boolean redelivered = Boolean.TRUE.equals(message.getMessageProperties().getRedelivered());
    MANUAL.offer(List.of(body, redelivered));
    if (body.equals("m1") || redelivered) {
      channel.basicAck(tag, false);
    } else {
      channel.basicNack(tag, false, true);
    }
  }

  @RabbitListener(queues = "${prefix}-auto", ackMode = "AUTO")
  public void auto(String body) {
    AUTO.offer(body);
  }

  @RabbitListener(queues = "${prefix}-retry", containerFactory = "retryingFactory")
  public void failing(String body) {
    RETRY_ATTEMPTS.incrementAndGet();
    throw new IllegalStateException("always fails: " + body);
  }

  static Map<String, Object> deathOf(Message message) {
    List<Map<String, ?>> deaths = message.getMessageProperties().getXDeathHeader();
    if (deaths == null || deaths.isEmpty()) return Map.of();
    Map<String, ?> death = deaths.get(0);
    Map<String, Object> result = new LinkedHashMap<>();
    for (String key : List.of("queue", "reason", "count")) result.put(key, String.valueOf(death.get(key)));
    return result;
  }
}
