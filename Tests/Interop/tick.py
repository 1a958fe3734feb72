"""A tiny protobuf message through the official Python runtime, for the client's payload tests.

    tick.py encode SYMBOL PRICE_E4 VOLUME   prints the serialized quotes.Tick as hex
    tick.py decode HEX                      prints the Tick's fields as JSON

The schema is built in code (no protoc needed):

    message Tick { string symbol = 1; int64 price_e4 = 2; uint64 volume = 3; repeated uint32 flags = 4; }
"""
import json
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def tick_class():
    file = descriptor_pb2.FileDescriptorProto(name="quotes_tick.proto", package="quotes", syntax="proto3")
    message = file.message_type.add(name="Tick")
    message.field.add(name="symbol", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    message.field.add(name="price_e4", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    message.field.add(name="volume", number=3, type=F.TYPE_UINT64, label=F.LABEL_OPTIONAL)
    message.field.add(name="flags", number=4, type=F.TYPE_UINT32, label=F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("quotes.Tick"))


def main():
    Tick = tick_class()
    if sys.argv[1] == "encode":
        tick = Tick(symbol=sys.argv[2], price_e4=int(sys.argv[3]), volume=int(sys.argv[4]), flags=[1, 300, 70000])
        print(tick.SerializeToString().hex())
    elif sys.argv[1] == "decode":
        tick = Tick()
        tick.ParseFromString(bytes.fromhex(sys.argv[2]))
        print(json.dumps({"symbol": tick.symbol, "price_e4": tick.price_e4, "volume": tick.volume,
                          "flags": list(tick.flags)}))
    else:
        sys.exit("usage: tick.py encode SYMBOL PRICE_E4 VOLUME | decode HEX")


if __name__ == "__main__":
    main()
