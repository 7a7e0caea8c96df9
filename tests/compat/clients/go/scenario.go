// The client matrix's Go program: amqp091-go as go.mod/go.sum pin it (module mode), and the same source on
// Debian's golang-github-rabbitmq-amqp091-go-dev in GOPATH mode.
// Usage: scenario AMQP_URL NAME_PREFIX [MANAGEMENT_URL]; prints one JSON observation (see tests/compat/clients/README.md).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const wait = 5 * time.Second

type obs = map[string]interface{}

var url, prefix string

func timeout(what string) error { return fmt.Errorf("timeout: %s", what) }

// step gives each scenario its own connection, so that a failure in one cannot hide the others.
func step(body func(*amqp.Connection) (obs, error)) obs {
	conn, err := amqp.DialConfig(url, amqp.Config{Heartbeat: 0, Dial: amqp.DefaultDial(wait)})
	if err != nil {
		return obs{"error": err.Error()}
	}
	defer conn.Close()
	result, err := body(conn)
	if err != nil {
		return obs{"error": err.Error()}
	}
	return result
}

func channelOpenClose(conn *amqp.Connection) (obs, error) {
	first, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	if err := first.Close(); err != nil {
		return nil, err
	}
	second, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	q, err := second.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		return nil, err
	}
	return obs{"first_closed": first.IsClosed(), "second_open": !second.IsClosed() && q.Messages == 0}, nil
}

func confirmsWithReturns(conn *amqp.Connection) (obs, error) {
	queue := prefix + "-confirms"
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	if _, err := ch.QueueDeclare(queue, false, false, true, false, nil); err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		return nil, err
	}
	// Unbuffered: the library's reader hands over each return and confirm in the order the frames arrived.
	returns := ch.NotifyReturn(make(chan amqp.Return))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation))
	go func() {
		_ = ch.Publish("", prefix+"-nowhere", true, false, amqp.Publishing{Body: []byte("r1")})
		_ = ch.Publish("", prefix+"-nowhere", true, false, amqp.Publishing{Body: []byte("r2")})
		_ = ch.Publish("", queue, true, false, amqp.Publishing{Body: []byte("m1")})
	}()
	events := [][]interface{}{}
	for acks := 0; acks < 3; {
		select {
		case r := <-returns:
			events = append(events, []interface{}{"return", r.ReplyCode, r.ReplyText, r.Exchange, r.RoutingKey, string(r.Body)})
		case c := <-confirms:
			kind := "ack"
			if !c.Ack {
				kind = "nack"
			}
			events = append(events, []interface{}{kind, c.DeliveryTag})
			acks++
		case <-time.After(wait):
			// Keep the reader moving (it blocks on these unbuffered channels), or closing the connection hangs.
			go func() {
				for range returns {
				}
			}()
			go func() {
				for range confirms {
				}
			}()
			return obs{"events": events, "error": "timeout: confirms"}, nil
		}
	}
	return obs{"events": events}, nil
}

func consumeAckNackReject(conn *amqp.Connection) (obs, error) {
	queue := prefix + "-consume"
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	if _, err := ch.QueueDeclare(queue, false, false, true, false, nil); err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		return nil, err
	}
	// A confirm listener, not PublishWithDeferredConfirm: amqp091-go 1.5.0 registers a deferred confirmation
	// only after sending the publish, so an ack its reader handles in between is lost and Wait blocks forever
	// (seen against RabbitMQ on a busy machine).
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 3))
	for _, body := range []string{"a", "b", "c"} {
		if err := ch.Publish("", queue, false, false, amqp.Publishing{Body: []byte(body)}); err != nil {
			return nil, err
		}
		select {
		case c := <-confirms:
			if !c.Ack {
				return nil, errors.New("publish nacked")
			}
		case <-time.After(wait):
			return nil, timeout("confirm")
		}
	}
	if err := ch.Qos(10, 0, false); err != nil {
		return nil, err
	}
	msgs, err := ch.Consume(queue, "ctag", false, false, false, false, nil)
	if err != nil {
		return nil, err
	}
	deliveries := [][]interface{}{}
	for done := false; !done; {
		select {
		case d := <-msgs:
			body := string(d.Body)
			deliveries = append(deliveries, []interface{}{body, d.Redelivered})
			switch {
			case body == "a":
				err = d.Ack(false)
			case body == "b":
				err = d.Nack(false, false)
			case !d.Redelivered:
				err = d.Reject(true)
			default:
				err, done = d.Ack(false), true
			}
			if err != nil {
				return nil, err
			}
		case <-time.After(wait):
			return obs{"deliveries": deliveries, "error": "timeout: deliveries"}, nil
		}
	}
	if err := ch.Cancel("ctag", false); err != nil {
		return nil, err
	}
	q, err := ch.QueueDeclarePassive(queue, false, false, true, false, nil)
	if err != nil {
		return nil, err
	}
	return obs{"deliveries": deliveries, "message_count": q.Messages}, nil
}

func directReplyTo(conn *amqp.Connection) (obs, error) {
	queue := prefix + "-rpc"
	server, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	if _, err := server.QueueDeclare(queue, false, false, true, false, nil); err != nil {
		return nil, err
	}
	requests, err := server.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		return nil, err
	}
	client, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	replies, err := client.Consume("amq.rabbitmq.reply-to", "", true, false, false, false, nil)
	if err != nil {
		return nil, err
	}
	err = client.Publish("", queue, false, false, amqp.Publishing{Body: []byte("ping"), ReplyTo: "amq.rabbitmq.reply-to", CorrelationId: "c1"})
	if err != nil {
		return nil, err
	}
	result := obs{}
	select {
	case req := <-requests:
		result["prefix"] = req.ReplyTo
		if strings.HasPrefix(req.ReplyTo, "amq.rabbitmq.reply-to.") {
			result["prefix"] = "amq.rabbitmq.reply-to."
		}
		// RabbitMQ answers a passive declare of the pseudo-queue's name with declare-ok.
		probe, err := conn.Channel()
		if err != nil {
			return nil, err
		}
		if _, err := probe.QueueDeclarePassive(req.ReplyTo, false, false, false, false, nil); err != nil {
			result["passive_declare"] = err.Error()
		} else {
			result["passive_declare"] = "declare-ok"
			_ = probe.Close()
		}
		err = server.Publish("", req.ReplyTo, false, false, amqp.Publishing{Body: []byte("pong"), CorrelationId: req.CorrelationId})
		if err != nil {
			return nil, err
		}
	case <-time.After(wait):
		return nil, timeout("request")
	}
	select {
	case reply := <-replies:
		result["reply"], result["correlation_id"] = string(reply.Body), reply.CorrelationId
	case <-time.After(wait):
		return nil, timeout("reply")
	}
	return result, nil
}

func heartbeats() obs {
	conn, err := amqp.DialConfig(url, amqp.Config{Heartbeat: time.Second, Dial: amqp.DefaultDial(wait)})
	if err != nil {
		return obs{"error": err.Error()}
	}
	defer conn.Close()
	negotiated := conn.Config.Heartbeat.Seconds()
	time.Sleep(3500 * time.Millisecond)
	ch, err := conn.Channel()
	if err != nil {
		return obs{"negotiated": negotiated, "error": err.Error()}
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		return obs{"negotiated": negotiated, "error": err.Error()}
	}
	return obs{"negotiated": negotiated, "alive": !conn.IsClosed() && q.Messages == 0}
}

func refusedPublish(conn *amqp.Connection) (obs, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	if err := ch.Publish(prefix+"-missing", "k", false, false, amqp.Publishing{Body: []byte("x")}); err != nil {
		return nil, err
	}
	result := obs{}
	select {
	case e := <-closed:
		result["error"] = obs{"code": e.Code, "reason": e.Reason, "server": e.Server, "recover": e.Recover}
	case <-time.After(wait):
		return nil, timeout("channel.close")
	}
	other, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	if _, err := other.QueueDeclare("", false, true, true, false, nil); err != nil {
		return nil, err
	}
	result["channel_closed"], result["connection_open"] = ch.IsClosed(), !conn.IsClosed()
	return result, nil
}

func main() {
	url, prefix = os.Args[1], os.Args[2]
	observation := obs{
		"channel":         step(channelOpenClose),
		"confirms":        step(confirmsWithReturns),
		"consume":         step(consumeAckNackReject),
		"direct_reply_to": step(directReplyTo),
		"heartbeats":      heartbeats(),
		"refused":         step(refusedPublish),
	}
	out, _ := json.Marshal(observation)
	fmt.Println(string(out))
}
