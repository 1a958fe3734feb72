package import LongLinkCore

extension ClientStatistics {
    /// Every figure as a metric: totals as `longlink_client_…_total` counters, what is held now as
    /// gauges (see the Metrics article for the list).
    package var metricSamples: [MetricSample] {
        [
            MetricSample("longlink_client_in_flight", .gauge, inFlight, "Requests waiting for a reply on the link now."),
            MetricSample("longlink_client_queued", .gauge, queued, "Requests waiting for the link now."),
            MetricSample("longlink_client_queued_bytes", .gauge, queuedBytes, "Payload bytes in the offline queue now."),
            MetricSample(
                "longlink_client_write_buffer_bytes", .gauge, writeBufferBytes,
                "Bytes written to the link and not yet taken by the kernel."),
            MetricSample(
                "longlink_client_round_trip_microseconds", .gauge,
                Int(((lastRoundTrip ?? .zero) / .microseconds(1)).rounded()),
                "The last round trip measured by Ping."),
            MetricSample("longlink_client_requests_sent_total", .counter, requestsSent, "Request frames written."),
            MetricSample(
                "longlink_client_replies_received_total", .counter, repliesReceived, "Requests answered with a reply."),
            MetricSample("longlink_client_timeouts_total", .counter, timeouts, "Requests that failed DEADLINE_EXCEEDED."),
            MetricSample("longlink_client_cancellations_total", .counter, cancellations, "Requests cancelled by callers."),
            MetricSample("longlink_client_resends_total", .counter, resends, "Requests sent again after a reconnect."),
            MetricSample(
                "longlink_client_unknown_replies_total", .counter, unknownReplies, "Replies no caller waited for."),
            MetricSample("longlink_client_connects_total", .counter, connects, "Links established."),
            MetricSample("longlink_client_reconnects_total", .counter, reconnects, "Links established after the first."),
            MetricSample(
                "longlink_client_dead_links_total", .counter, deadLinks, "Links declared dead by heartbeat or probe."),
            MetricSample("longlink_client_migrations_total", .counter, migrations, "Live migrations to another endpoint."),
            MetricSample("longlink_client_probes_total", .counter, probes, "Endpoint probes made."),
            MetricSample("longlink_client_failed_connects_total", .counter, failedConnects, "Connections that failed."),
            MetricSample("longlink_client_pushes_received_total", .counter, pushesReceived, "Push frames received."),
            MetricSample(
                "longlink_client_pushes_delivered_total", .counter, pushesDelivered, "Reliable pushes taken by the app."),
            MetricSample(
                "longlink_client_duplicate_pushes_dropped_total", .counter, duplicatePushesDropped,
                "Reliable pushes received again after the app had them."),
            MetricSample(
                "longlink_client_best_effort_pushes_dropped_total", .counter, bestEffortPushesDropped,
                "Best-effort pushes dropped because the consumer was behind or absent."),
            MetricSample(
                "longlink_client_best_effort_pushes_conflated_total", .counter, bestEffortPushesConflated,
                "Best-effort pushes that replaced an older one of their conflation key."),
            MetricSample(
                "longlink_client_reliable_pushes_deferred_total", .counter, reliablePushesDeferred,
                "Reliable pushes left unacknowledged, to come again after Sync."),
            MetricSample("longlink_client_acks_sent_total", .counter, acksSent, "Seqs acknowledged to the server."),
            MetricSample(
                "longlink_client_compression_failures_total", .counter, compressionFailures,
                "Compressed replies and pushes that did not inflate."),
            MetricSample(
                "longlink_client_undecodable_pushes_total", .counter, undecodablePushes,
                "Pushes a typed stream could not decode."),
            MetricSample(
                "longlink_client_dead_letter_pushes_total", .counter, deadLetterPushes,
                "Undecodable reliable pushes acknowledged without hand-over."),
            MetricSample(
                "longlink_client_stale_acks_dropped_total", .counter, staleAcksDropped,
                "Acknowledgements dropped because the next link numbers pushes anew."),
        ]
    }
}
