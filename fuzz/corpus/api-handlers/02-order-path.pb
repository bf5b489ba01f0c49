
MT%2F..%2F