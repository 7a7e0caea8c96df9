<?php
// The client matrix's PHP program: php-amqplib (Debian's php-amqplib), single-threaded: it reads frames, and so
// heartbeats, only inside wait() and other calls.
// Usage: php scenario.php AMQP_URL NAME_PREFIX; prints one JSON observation (see tests/compat/clients/README.md).

require_once 'PhpAmqpLib/autoload.php';

use PhpAmqpLib\Connection\AMQPStreamConnection;
use PhpAmqpLib\Exception\AMQPProtocolException;
use PhpAmqpLib\Exception\AMQPTimeoutException;
use PhpAmqpLib\Message\AMQPMessage;

const WAIT_S = 5;
[, $url, $prefix] = $argv;

function connect(string $url, int $heartbeat): AMQPStreamConnection
{
    $u = parse_url($url);
    $vhost = isset($u['path']) && $u['path'] !== '/' ? urldecode(substr($u['path'], 1)) : '/';
    return new AMQPStreamConnection(
        $u['host'], $u['port'], urldecode($u['user']), urldecode($u['pass']), $vhost,
        false, 'AMQPLAIN', null, 'en_US', WAIT_S, WAIT_S, null, false, $heartbeat
    );
}

function error(Throwable $err): array
{
    return ['error' => (new ReflectionClass($err))->getShortName() . ': ' . $err->getMessage()];
}

// Each step has its own connection, so that a failure in one cannot hide the others.
function step(callable $body): array
{
    global $url;
    $conn = null;
    try {
        $conn = connect($url, 0);
        return $body($conn);
    } catch (Throwable $err) {
        return error($err);
    } finally {
        try {
            if ($conn !== null && $conn->isConnected()) {
                $conn->close();
            }
        } catch (Throwable $ignored) {
        }
    }
}

// Reads frames on the channel until $done() holds or WAIT_S has passed; false on timeout.
function wait_until($ch, callable $done): bool
{
    $deadline = microtime(true) + WAIT_S;
    while (!$done()) {
        if (microtime(true) > $deadline) {
            return false;
        }
        try {
            $ch->wait(null, false, 0.2);
        } catch (AMQPTimeoutException $ignored) {
        }
    }
    return true;
}

function channel_open_close(AMQPStreamConnection $conn): array
{
    $first = $conn->channel();
    $first->close();
    $second = $conn->channel();
    [, $count] = $second->queue_declare('', false, false, true, true);
    return ['first_closed' => !$first->is_open(), 'second_open' => $second->is_open() && $count === 0];
}

function confirms_with_returns(AMQPStreamConnection $conn): array
{
    global $prefix;
    $queue = "$prefix-confirms";
    $ch = $conn->channel();
    $ch->queue_declare($queue, false, false, true, false);
    $ch->confirm_select();
    $events = [];
    $ch->set_return_listener(function ($code, $text, $exchange, $routing_key, AMQPMessage $msg) use (&$events) {
        $events[] = ['return', $code, $text, $exchange, $routing_key, $msg->getBody()];
    });
    $ch->set_ack_handler(function (AMQPMessage $msg) use (&$events) {
        $events[] = ['ack', $msg->getDeliveryTag()];
    });
    $ch->set_nack_handler(function (AMQPMessage $msg) use (&$events) {
        $events[] = ['nack', $msg->getDeliveryTag()];
    });
    $ch->basic_publish(new AMQPMessage('r1'), '', "$prefix-nowhere", true);
    $ch->basic_publish(new AMQPMessage('r2'), '', "$prefix-nowhere", true);
    $ch->basic_publish(new AMQPMessage('m1'), '', $queue, true);
    $ch->wait_for_pending_acks_returns(WAIT_S);
    return ['events' => $events];
}

function consume_ack_nack_reject(AMQPStreamConnection $conn): array
{
    global $prefix;
    $queue = "$prefix-consume";
    $ch = $conn->channel();
    $ch->queue_declare($queue, false, false, true, false);
    $ch->confirm_select();
    foreach (['a', 'b', 'c'] as $body) {
        $ch->basic_publish(new AMQPMessage($body), '', $queue);
    }
    $ch->wait_for_pending_acks(WAIT_S);
    $ch->basic_qos(0, 10, false);
    $deliveries = [];
    $done = false;
    $ch->basic_consume($queue, 'ctag', false, false, false, false, function (AMQPMessage $msg) use (&$deliveries, &$done) {
        $body = $msg->getBody();
        $deliveries[] = [$body, $msg->isRedelivered()];
        if ($body === 'a') {
            $msg->ack();
        } elseif ($body === 'b') {
            $msg->nack(false);
        } elseif (!$msg->isRedelivered()) {
            $msg->reject(true);
        } else {
            $msg->ack();
            $done = true;
        }
    });
    $result = wait_until($ch, function () use (&$done) { return $done; }) ? [] : ['error' => 'timeout: deliveries'];
    $ch->basic_cancel('ctag');
    [, $count] = $ch->queue_declare($queue, true);
    return $result + ['deliveries' => $deliveries, 'message_count' => $count];
}

function direct_reply_to(AMQPStreamConnection $conn): array
{
    global $prefix;
    $queue = "$prefix-rpc";
    $server = $conn->channel();
    $server->queue_declare($queue, false, false, true, false);
    $result = [];
    $server->basic_consume($queue, '', false, true, false, false, function (AMQPMessage $req) use ($conn, $server, &$result) {
        $replyTo = $req->get('reply_to');
        $result['prefix'] = str_starts_with($replyTo, 'amq.rabbitmq.reply-to.') ? 'amq.rabbitmq.reply-to.' : $replyTo;
        // RabbitMQ answers a passive declare of the pseudo-queue's name with declare-ok.
        $probe = $conn->channel();
        try {
            $probe->queue_declare($replyTo, true);
            $result['passive_declare'] = 'declare-ok';
            $probe->close();
        } catch (Throwable $err) {
            $result['passive_declare'] = error($err)['error'];
        }
        $server->basic_publish(new AMQPMessage('pong', ['correlation_id' => $req->get('correlation_id')]), '', $replyTo);
    });
    $client = $conn->channel();
    $reply = null;
    $client->basic_consume('amq.rabbitmq.reply-to', '', false, true, false, false, function (AMQPMessage $msg) use (&$reply) {
        $reply = [$msg->getBody(), $msg->get('correlation_id')];
    });
    $client->basic_publish(new AMQPMessage('ping', ['reply_to' => 'amq.rabbitmq.reply-to', 'correlation_id' => 'c1']), '', $queue);
    // One thread: the request is read by waiting on the server's channel, the reply on the client's.
    wait_until($server, function () use (&$result) { return isset($result['prefix']); });
    if (!wait_until($client, function () use (&$reply) { return $reply !== null; })) {
        return $result + ['error' => 'timeout: reply'];
    }
    return $result + ['reply' => $reply[0], 'correlation_id' => $reply[1]];
}

function heartbeats(): array
{
    global $url;
    $result = [];
    $conn = null;
    try {
        $conn = connect($url, 1);
        $result['negotiated'] = $conn->getHeartbeat();
        $ch = $conn->channel();
        // Idle for 3.5 intervals, reading (and so answering heartbeats) the only way this client can.
        $deadline = microtime(true) + 3.5;
        while (microtime(true) < $deadline) {
            try {
                $ch->wait(null, false, 0.25);
            } catch (AMQPTimeoutException $ignored) {
            }
        }
        [, $count] = $ch->queue_declare('', false, false, true, true);
        $result['alive'] = $conn->isConnected() && $count === 0;
        $conn->close();
    } catch (Throwable $err) {
        $result += error($err);
    }
    return $result;
}

function refused_publish(AMQPStreamConnection $conn): array
{
    global $prefix;
    $ch = $conn->channel();
    $ch->basic_publish(new AMQPMessage('x'), "$prefix-missing", 'k');
    $result = [];
    try {
        // The channel.close arrives asynchronously; the next call on the channel reports it.
        $ch->queue_declare('', false, false, true, true);
        $result['error'] = 'no error';
    } catch (AMQPProtocolException $err) {
        $result['error'] = [
            'class' => (new ReflectionClass($err))->getShortName(),
            'code' => $err->getCode(),
            'message' => $err->getMessage(),
            'method_sig' => $err->amqp_method_sig,
        ];
    }
    $conn->channel()->queue_declare('', false, false, true, true);
    return $result + ['channel_closed' => !$ch->is_open(), 'connection_open' => $conn->isConnected()];
}

$observation = [
    'channel' => step('channel_open_close'),
    'confirms' => step('confirms_with_returns'),
    'consume' => step('consume_ack_nack_reject'),
    'direct_reply_to' => step('direct_reply_to'),
    'heartbeats' => heartbeats(),
    'refused' => step('refused_publish'),
];
echo json_encode($observation, JSON_UNESCAPED_SLASHES), "\n";
