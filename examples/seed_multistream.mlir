// The model of the multi-stream seed documents (TorchAir's npu_stream_switch /
// npu_wait_tensor example): add_result and mm1 on the default stream, mm_result
// on stream "1" after add_result, add2 on stream "2" after mm_result.
module attributes {npu.target = "910b2"} {
  func.func @forward(%in1: tensor<1000x1000xf16>, %in2: tensor<1000x1000xf16>,
                     %in3: tensor<1000x1000xf16>, %in4: tensor<1000x1000xf16>)
      -> (tensor<1000x1000xf16>, tensor<1000x1000xf16>, tensor<1000x1000xf16>, tensor<1000x1000xf16>) {
    %add_result = npu.add %in1, %in2 : (tensor<1000x1000xf16>, tensor<1000x1000xf16>) -> tensor<1000x1000xf16>
    %mm_result = stream.switch "1" -> tensor<1000x1000xf16> {
      %in4_w = stream.wait_tensor %in4 after %add_result : tensor<1000x1000xf16>, tensor<1000x1000xf16>
      %m = npu.matmul %in3, %in4_w : (tensor<1000x1000xf16>, tensor<1000x1000xf16>) -> tensor<1000x1000xf16>
      stream.yield %m : tensor<1000x1000xf16>
    }
    %mm1 = npu.matmul %in3, %in4 : (tensor<1000x1000xf16>, tensor<1000x1000xf16>) -> tensor<1000x1000xf16>
    %add2 = stream.switch "2" -> tensor<1000x1000xf16> {
      %in4_w2 = stream.wait_tensor %in4 after %mm_result : tensor<1000x1000xf16>, tensor<1000x1000xf16>
      %a = npu.add %in3, %in4_w2 : (tensor<1000x1000xf16>, tensor<1000x1000xf16>) -> tensor<1000x1000xf16>
      stream.yield %a : tensor<1000x1000xf16>
    }
    func.return %add_result, %mm_result, %mm1, %add2 : tensor<1000x1000xf16>, tensor<1000x1000xf16>, tensor<1000x1000xf16>, tensor<1000x1000xf16>
  }
}
