// The gear seed document's model: x1 + x2 with dim 0 of both inputs taking
// the gears 2 and 4 (TorchAir: set_dim_gears(x1, {0: [2, 4]}) and the same
// for x2).  Under "zip" this gives two static versions.
module attributes {npu.target = "910b2"} {
  func.func @forward(%x1: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>},
                     %x2: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>}) -> tensor<?x2xf32>
      attributes {gear.policy = "zip"} {
    %sum = npu.add %x1, %x2 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    func.return %sum : tensor<?x2xf32>
  }
}
