module example.com/appstore-gateway/examples/webhooks/go

go 1.19
