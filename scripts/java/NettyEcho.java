// NettyEcho is the Netty row of the frameworks experiment, as the
// benchmark report wrote it: Netty 4.1's NIO transport with TCP_NODELAY on
// every accepted channel, an HTTP codec and aggregator for the upgrade,
// Netty's own WebSocketServerProtocolHandler at "/" (which answers pings
// and closes), and a handler that writes each text and binary frame back
// as it came. No logging handler, no compression. It runs on Debian's
// libnetty-java (/usr/share/java/netty-*.jar); scripts/java/build.sh
// compiles it and writes the java command's arguments beside the class.
//
//   java @scripts/java/build/NettyEcho.args [port=0]
//
// Port 0 takes a free port. Once bound it prints one JSON line
// {"msg":"listening","addr":"HOST:PORT","framework":"netty 4.1.x"} on
// stdout, and serves until the JVM is stopped (SIGTERM, SIGINT).

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import io.netty.util.Version;
import java.net.InetSocketAddress;

public final class NettyEcho {
    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup();
        try {
            ServerBootstrap b = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(NioServerSocketChannel.class)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(
                                    new HttpServerCodec(),
                                    new HttpObjectAggregator(65536),
                                    new WebSocketServerProtocolHandler("/"),
                                    new Echo());
                        }
                    });
            Channel ch = b.bind("127.0.0.1", port).sync().channel();
            InetSocketAddress addr = (InetSocketAddress) ch.localAddress();
            Version v = Version.identify().get("netty-codec-http");
            String version = v == null ? "unknown" : v.artifactVersion();
            System.out.println("{\"msg\":\"listening\",\"addr\":\"" + addr.getHostString() + ":" + addr.getPort()
                    + "\",\"framework\":\"netty " + version + "\",\"java\":\"" + System.getProperty("java.version") + "\"}");
            System.out.flush();
            ch.closeFuture().sync();
        } finally {
            boss.shutdownGracefully();
            workers.shutdownGracefully();
        }
    }

    // Echo writes each data frame back; WebSocketServerProtocolHandler has
    // answered pings and closes before it. SimpleChannelInboundHandler
    // releases the frame on return, so the write takes a reference of its
    // own.
    static final class Echo extends SimpleChannelInboundHandler<WebSocketFrame> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, WebSocketFrame frame) {
            if (frame instanceof TextWebSocketFrame || frame instanceof BinaryWebSocketFrame) {
                ctx.writeAndFlush(frame.retain());
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close(); // a bad client costs its connection only
        }
    }
}
