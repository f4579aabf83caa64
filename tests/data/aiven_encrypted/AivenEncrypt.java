// Encrypts pieces the way Aiven's tiered-storage-for-apache-kafka does with encryption.enabled (read at 8fb1581:
// security/RsaEncryptionProvider.java, security/AesEncryptionProvider.java,
// transform/EncryptionChunkEnumeration.java), with the same JCE calls and providers, so that the fixture next to it
// holds bytes kafkaseg did not write. Used by regenerate.py; needs Java 17 and BouncyCastle (Debian:
// libbcprov-java, /usr/share/java/bcprov.jar).
//
//   java -cp /usr/share/java/bcprov.jar AivenEncrypt.java gen <dir> <key id>
//       a 2048-bit RSA key pair from BouncyCastle: <key id>-public.pem (X.509) and <key id>-private.pem (PKCS#8)
//   java -cp /usr/share/java/bcprov.jar AivenEncrypt.java encrypt <public.pem> <key id> <dir>
//       one segment: a new AES-256 data key and a 32-byte AAD (AesEncryptionProvider.createDataKeyAndAAD), the
//       key wrapped as "<key id>:" + base64(RSA/NONE/OAEPWithSHA3-512AndMGF1Padding) (dataKey.txt, aad.b64),
//       and every <dir>/piece-NNNN.bin stored as piece-NNNN.enc = iv | AES/GCM/NoPadding ciphertext | tag,
//       a fresh iv each (EncryptionChunkEnumeration.transformChunk)
import java.nio.file.*;
import java.security.*;
import java.security.spec.X509EncodedKeySpec;
import java.util.*;
import javax.crypto.*;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.util.io.pem.*;

public class AivenEncrypt {
    static final String RSA_TRANSFORMATION = "RSA/NONE/OAEPWithSHA3-512AndMGF1Padding";
    static final String AES_TRANSFORMATION = "AES/GCM/NoPadding";

    public static void main(String[] args) throws Exception {
        Security.addProvider(new BouncyCastleProvider());
        if (args[0].equals("gen")) {
            Path dir = Path.of(args[1]);
            KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA", "BC");
            generator.initialize(2048, new SecureRandom());
            KeyPair pair = generator.generateKeyPair();
            write(dir.resolve(args[2] + "-public.pem"), "PUBLIC KEY", pair.getPublic().getEncoded());
            write(dir.resolve(args[2] + "-private.pem"), "PRIVATE KEY", pair.getPrivate().getEncoded());
            return;
        }
        byte[] der;
        try (PemReader reader = new PemReader(Files.newBufferedReader(Path.of(args[1])))) {
            der = reader.readPemObject().getContent();  // RsaKeyReader: the first PEM block, whatever its label
        }
        PublicKey publicKey = KeyFactory.getInstance("RSA").generatePublic(new X509EncodedKeySpec(der));
        Path dir = Path.of(args[3]);
        KeyGenerator aes = KeyGenerator.getInstance("AES");
        aes.init(256, new SecureRandom());
        SecretKey dataKey = aes.generateKey();
        byte[] aad = aes.generateKey().getEncoded();
        Cipher rsa = Cipher.getInstance(RSA_TRANSFORMATION, "BC");
        rsa.init(Cipher.ENCRYPT_MODE, publicKey, new SecureRandom());
        String wrapped = args[2] + ":" + Base64.getEncoder().encodeToString(rsa.doFinal(dataKey.getEncoded()));
        Files.writeString(dir.resolve("dataKey.txt"), wrapped);
        Files.writeString(dir.resolve("aad.b64"), Base64.getEncoder().encodeToString(aad));
        List<Path> pieces = new ArrayList<>();
        try (DirectoryStream<Path> found = Files.newDirectoryStream(dir, "piece-*.bin")) {
            found.forEach(pieces::add);
        }
        Collections.sort(pieces);
        for (Path piece : pieces) {
            byte[] chunk = Files.readAllBytes(piece);
            Cipher cipher = Cipher.getInstance(AES_TRANSFORMATION);
            cipher.init(Cipher.ENCRYPT_MODE, dataKey, new SecureRandom());
            cipher.updateAAD(aad);
            byte[] iv = cipher.getIV();
            byte[] stored = new byte[iv.length + cipher.getOutputSize(chunk.length)];
            System.arraycopy(iv, 0, stored, 0, iv.length);
            cipher.doFinal(chunk, 0, chunk.length, stored, iv.length);
            String name = piece.getFileName().toString();
            Files.write(dir.resolve(name.substring(0, name.length() - 4) + ".enc"), stored);
        }
    }

    static void write(Path path, String label, byte[] der) throws Exception {
        try (PemWriter writer = new PemWriter(Files.newBufferedWriter(path))) {
            writer.writeObject(new PemObject(label, der));
        }
    }
}
