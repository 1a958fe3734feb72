package import LongLinkCore

extension ServerStatistics {
    /// Every figure as a metric: totals as `longlink_server_…_total` counters, what is held now as
    /// gauges (see the Metrics article for the list).
    package var metricSamples: [MetricSample] {
        [
            MetricSample(
                "longlink_server_open_connections", .gauge, openConnections,
                "Connections open now."),
            MetricSample(
                "longlink_server_handlers_running", .gauge, handlersRunning,
                "Handlers running now."),
            MetricSample(
                "longlink_server_dedupe_entries", .gauge, dedupeEntries,
                "Requests the de-duplication window holds now, running and finished."),
            MetricSample(
                "longlink_server_dedupe_stored_bytes", .gauge, dedupeStoredBytes,
                "Bytes of stored replies the de-duplication window holds now."),
            MetricSample(
                "longlink_server_tls_handshakes_pending", .gauge, tlsHandshakesPending,
                "TLS handshakes under way now."),
            MetricSample(
                "longlink_server_accepted_connections_total", .counter, acceptedConnections,
                "Connections accepted."),
            MetricSample(
                "longlink_server_rejected_connections_total", .counter, rejectedConnections,
                "Connections turned away at the connection or handshake limits."),
            MetricSample(
                "longlink_server_protocol_violations_total", .counter, protocolViolations,
                "Connections closed for breaking the protocol."),
            MetricSample(
                "longlink_server_idle_closures_total", .counter, idleClosures,
                "Connections closed for silence longer than three heartbeat intervals."),
            MetricSample(
                "longlink_server_read_pauses_total", .counter, readPauses,
                "Times a connection stopped reading because its client did not read its replies."),
            MetricSample(
                "longlink_server_requests_received_total", .counter, requestsReceived,
                "Requests received, duplicates included."),
            MetricSample(
                "longlink_server_handlers_started_total", .counter, handlersStarted,
                "Handler executions started."),
            MetricSample(
                "longlink_server_requests_replayed_total", .counter, requestsReplayed,
                "Duplicate requests answered from the de-duplication window."),
            MetricSample(
                "longlink_server_requests_joined_total", .counter, requestsJoined,
                "Duplicate requests that joined a running execution."),
            MetricSample(
                "longlink_server_dedupe_refusals_total", .counter, dedupeRefusals,
                "New requests refused RESOURCE_EXHAUSTED at a de-duplication budget."),
            MetricSample(
                "longlink_server_dedupe_replies_not_kept_total", .counter, dedupeRepliesNotKept,
                "Replies too large for their client's de-duplication budget."),
            MetricSample(
                "longlink_server_responses_sent_total", .counter, responsesSent,
                "Responses written."),
            MetricSample(
                "longlink_server_requests_rejected_total", .counter, requestsRejected,
                "Requests refused at the connection's in-flight limit."),
            MetricSample(
                "longlink_server_requests_cancelled_total", .counter, requestsCancelled,
                "Handlers cancelled by the client's Cancel."),
            MetricSample(
                "longlink_server_requests_timed_out_total", .counter, requestsTimedOut,
                "Handlers stopped by their deadline."),
            MetricSample(
                "longlink_server_reliable_pushes_stored_total", .counter, reliablePushesStored,
                "Reliable pushes stored."),
            MetricSample(
                "longlink_server_reliable_pushes_sent_total", .counter, reliablePushesSent,
                "Reliable push frames written, redeliveries included."),
            MetricSample(
                "longlink_server_best_effort_pushes_sent_total", .counter, bestEffortPushesSent,
                "Best-effort push frames written."),
            MetricSample(
                "longlink_server_best_effort_pushes_dropped_total", .counter, bestEffortPushesDropped,
                "Best-effort pushes dropped because a connection was not writable."),
            MetricSample(
                "longlink_server_acks_received_total", .counter, acksReceived,
                "Sequence numbers acknowledged by clients."),
            MetricSample(
                "longlink_server_push_windows_reopened_total", .counter, pushWindowsReopened,
                "Full push windows opened again after the window timeout."),
            MetricSample(
                "longlink_server_orphaned_executions_total", .counter, orphanedExecutions,
                "Handlers kept running after their connection closed, for a resend to join."),
            MetricSample(
                "longlink_server_orphans_refused_total", .counter, orphansRefused,
                "Handlers stopped when their connection closed, at the orphan bounds."),
            MetricSample(
                "longlink_server_tls_handshake_failures_total", .counter, tlsHandshakeFailures,
                "TLS handshakes that failed or timed out."),
            MetricSample(
                "longlink_server_store_failures_total", .counter, sharedStoreFailures,
                "Operations on the server's stores that failed."),
            MetricSample(
                "longlink_server_store_calls_retried_total", .counter, storeCallsRetried,
                "Calls to the server's stores made again after a failure that passes."),
            MetricSample(
                "longlink_server_sessions_replaced_total", .counter, sessionsReplaced,
                "Sessions ended because their principal logged in elsewhere."),
            MetricSample(
                "longlink_server_outcomes_unknown_total", .counter, outcomesUnknown,
                "Fleet requests answered UNKNOWN because the server running them stopped."),
            MetricSample(
                "longlink_server_claims_lost_total", .counter, claimsLost,
                "Fleet requests whose de-duplication claim lapsed before the reply was stored."),
            MetricSample(
                "longlink_server_session_events_dropped_total", .counter, sessionEventsDropped,
                "Session events dropped for a reader that fell behind."),
            MetricSample(
                "longlink_server_credential_expiries_total", .counter, credentialExpiries,
                "Sessions ended because their credential expired before a refresh renewed it."),
        ]
    }
}
