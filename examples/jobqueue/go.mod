module github.com/pacehttp/pace/examples/jobqueue

go 1.26.0

replace (
	github.com/pacehttp/pace => ../..
	github.com/pacehttp/pace/asynqpace => ../../asynqpace
)

require (
	github.com/hibiken/asynq v0.26.0
	github.com/pacehttp/pace v0.0.0-00010101000000-000000000000
	github.com/pacehttp/pace/asynqpace v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.22.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.34.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.21.0 // indirect
	golang.org/x/time v0.14.0 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
)
