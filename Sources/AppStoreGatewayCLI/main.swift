print("appstore-gateway")
