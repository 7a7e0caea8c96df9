// Testcontainers for Java's RabbitMQ module (org.testcontainers:rabbitmq) starting the WarrenMQ image, unchanged
// but for the image name declared a compatible substitute for "rabbitmq" (the module refuses any other name).
// It waits for the log line "Server startup complete"; withRabbitMQConfig copies a rabbitmq.conf into the
// container and names it with RABBITMQ_CONFIG_FILE; withVhost, withUser, withPermission, withExchange,
// withQueue, withBinding and withPolicy run `rabbitmqadmin declare ...` in the container once it started, and
// only log a failed command, so every one of them is checked below through what it made. Run by
// tests/container/test_testcontainers.py with DOCKER_HOST on podman's API socket; the part between the
// snippet markers is docs/drop-in.md's Java example, word for word.
package io.warrenmq.tests;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.MessageProperties;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Map;
import java.util.Set;
import org.testcontainers.containers.RabbitMQContainer;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.MountableFile;

public final class TestcontainersJava {
    private TestcontainersJava() {}

    public static void main(String[] args) throws Exception {
        String imageName = System.getenv().getOrDefault("WARRENMQ_IMAGE", "warrenmq:test");
        Path rabbitmqConf = Files.writeString(Files.createTempFile("rabbitmq", ".conf"),
            "cluster_name = testcontainers-java\n");
        // snippet: testcontainers-java
        DockerImageName image = DockerImageName.parse(imageName).asCompatibleSubstituteFor("rabbitmq");
        try (RabbitMQContainer rabbitmq = new RabbitMQContainer(image)
                .withRabbitMQConfig(MountableFile.forHostPath(rabbitmqConf, 0644))
                .withVhost("orders")
                .withUser("app", "app-secret", Set.of("management"))
                .withPermission("orders", "app", ".*", ".*", ".*")
                .withExchange("orders", "events", "topic")
                .withQueue("orders", "created")
                .withBinding("orders", "events", "created", Map.of(), "order.created", "queue")
                .withPolicy("orders", "ttl", "^created$", Map.of("message-ttl", 60000))) {
            rabbitmq.start();

            ConnectionFactory factory = new ConnectionFactory();
            factory.setUri(rabbitmq.getAmqpUrl());
            factory.setUsername("app");
            factory.setPassword("app-secret");
            factory.setVirtualHost("orders");
            try (Connection connection = factory.newConnection()) {
                Channel channel = connection.createChannel();
                channel.confirmSelect();
                channel.basicPublish("events", "order.created", true, MessageProperties.PERSISTENT_TEXT_PLAIN,
                    "from java".getBytes(StandardCharsets.UTF_8));
                channel.waitForConfirmsOrDie(10_000);
                GetResponse message = channel.basicGet("created", true);
                check(message != null && "from java".equals(new String(message.getBody(), StandardCharsets.UTF_8)),
                    "the message published through the declared binding");
            }

            String auth = Base64.getEncoder().encodeToString(
                (rabbitmq.getAdminUsername() + ":" + rabbitmq.getAdminPassword()).getBytes(StandardCharsets.UTF_8));
            HttpClient http = HttpClient.newHttpClient();
            String overview = http.send(HttpRequest.newBuilder(URI.create(rabbitmq.getHttpUrl() + "/api/overview"))
                .header("Authorization", "Basic " + auth).build(), HttpResponse.BodyHandlers.ofString()).body();
            check(overview.contains("\"cluster_name\":\"testcontainers-java\""), "cluster_name from the config file");
            String queue = http.send(HttpRequest.newBuilder(URI.create(rabbitmq.getHttpUrl() + "/api/queues/orders/created"))
                .header("Authorization", "Basic " + auth).build(), HttpResponse.BodyHandlers.ofString()).body();
            check(queue.contains("\"policy\":\"ttl\""), "the policy applied to the declared queue: " + queue);
        }
        // end snippet
        System.out.println("testcontainers-java: publish, consume and management API passed");
        // Testcontainers' Docker client keeps non-daemon threads alive.
        System.exit(0);
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError("failed: " + what);
        }
    }
}
