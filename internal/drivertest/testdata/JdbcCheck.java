// Run by TestJDBC (internal/drivertest): pgjdbc through the proxy.
//   javac -d DIR JdbcCheck.java
//   java -cp DIR:/usr/share/java/postgresql.jar JdbcCheck HOST:PORT ROWS STEP
// orders holds ids 1..ROWS over four shards (customer_id = id % 50 + 1,
// amount = (id % 997).(id % 100)). STEP checks what it reads and prints one
// line "STEP key=value ..."; any failure throws (exit status 1, the stack
// trace on stderr). Every socket read times out after READ_TIMEOUT seconds,
// so a session that never answers fails the step instead of hanging it.
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Properties;

import org.postgresql.PGStatement;

public class JdbcCheck {
    static final int READ_TIMEOUT = 30;

    static String addr;
    static int rows;

    public static void main(String[] args) throws Exception {
        addr = args[0];
        rows = Integer.parseInt(args[1]);
        String step = args[2];
        String out;
        switch (step) {
            case "fetch_ordered": out = fetchOrdered(); break;
            case "fetch_unordered": out = fetchUnordered(); break;
            case "prepared": out = prepared(); break;
            case "batch": out = batch(); break;
            case "plain": out = plain(); break;
            default: throw new IllegalArgumentException("unknown step " + step);
        }
        System.out.println(step + " " + out);
    }

    static Connection connect(boolean rewriteBatches) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", "app");
        p.setProperty("sslmode", "disable");
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", String.valueOf(READ_TIMEOUT));
        if (rewriteBatches) {
            p.setProperty("reWriteBatchedInserts", "true");
        }
        return DriverManager.getConnection("jdbc:postgresql://" + addr + "/shop", p);
    }

    // amount is the amount of order id, as the load writes it.
    static BigDecimal amount(long id) {
        return BigDecimal.valueOf((id % 997) * 100 + id % 100, 2);
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    // fetchOrdered streams the 100 k-row merge of four shards as JDBC does:
    // autocommit off, setFetchSize, so each fetch is Execute(n) + Sync on
    // the same portal.
    static String fetchOrdered() throws SQLException {
        try (Connection c = connect(false)) {
            c.setAutoCommit(false);
            try (PreparedStatement st = c.prepareStatement("SELECT id, customer_id, amount FROM orders ORDER BY id")) {
                st.setFetchSize(1000);
                long n = 0;
                try (ResultSet rs = st.executeQuery()) {
                    while (rs.next()) {
                        n++;
                        long id = rs.getLong(1);
                        check(id == n, "row " + n + ": id " + id + ", want " + n + " (order or completeness)");
                        check(rs.getLong(2) == id % 50 + 1, "id " + id + ": customer_id " + rs.getLong(2));
                        check(rs.getBigDecimal(3).equals(amount(id)), "id " + id + ": amount " + rs.getBigDecimal(3));
                    }
                }
                c.commit();
                return "rows=" + n;
            }
        }
    }

    // fetchUnordered streams a read of every shard without ORDER BY the same
    // way: every id must come once, in any order.
    static String fetchUnordered() throws SQLException {
        try (Connection c = connect(false)) {
            c.setAutoCommit(false);
            try (PreparedStatement st = c.prepareStatement("SELECT id, amount FROM orders")) {
                st.setFetchSize(1000);
                boolean[] seen = new boolean[rows + 1];
                long n = 0;
                try (ResultSet rs = st.executeQuery()) {
                    while (rs.next()) {
                        long id = rs.getLong(1);
                        check(id >= 1 && id <= rows, "id " + id + " out of 1.." + rows);
                        check(!seen[(int) id], "id " + id + " twice");
                        check(rs.getBigDecimal(2).equals(amount(id)), "id " + id + ": amount " + rs.getBigDecimal(2));
                        seen[(int) id] = true;
                        n++;
                    }
                }
                c.commit();
                check(n == rows, n + " rows, want " + rows);
                return "rows=" + n;
            }
        }
    }

    // prepared runs four PreparedStatements 12 times each, past
    // prepareThreshold (5): from then on pgjdbc uses a named server-side
    // statement, binds its parameters with their types (int8, int4,
    // numeric, text, timestamptz, bool) and asks for binary results of the
    // types it decodes (int8, timestamptz; text for numeric, interval).
    static String prepared() throws SQLException {
        try (Connection c = connect(false)) {
            OffsetDateTime base = OffsetDateTime.of(2024, 3, 1, 12, 30, 0, 0, ZoneOffset.UTC);
            int updated = 0, read = 0;
            boolean serverPrepared = true;
            try (PreparedStatement up = c.prepareStatement("UPDATE orders SET note = ?, placed = ? WHERE customer_id = ? AND id = ?");
                 PreparedStatement sel = c.prepareStatement("SELECT id, amount, note, placed FROM orders WHERE customer_id = ? AND id = ? AND amount = ?")) {
                for (int i = 1; i <= 12; i++) {
                    long id = i * 7;
                    up.setString(1, "note " + i);
                    up.setObject(2, base.plusDays(i));
                    up.setLong(3, id % 50 + 1);
                    up.setInt(4, (int) id);
                    updated += up.executeUpdate();
                }
                for (int i = 1; i <= 12; i++) {
                    long id = i * 7;
                    sel.setLong(1, id % 50 + 1);
                    sel.setLong(2, id);
                    sel.setBigDecimal(3, amount(id));
                    try (ResultSet rs = sel.executeQuery()) {
                        check(rs.next(), "id " + id + ": no row");
                        check(rs.getLong(1) == id, "id " + id + ": read id " + rs.getLong(1));
                        check(rs.getBigDecimal(2).equals(amount(id)), "id " + id + ": amount " + rs.getBigDecimal(2));
                        check(("note " + i).equals(rs.getString(3)), "id " + id + ": note " + rs.getString(3));
                        OffsetDateTime placed = rs.getObject(4, OffsetDateTime.class);
                        check(placed.isEqual(base.plusDays(i)), "id " + id + ": placed " + placed);
                        check(!rs.next(), "id " + id + ": two rows");
                        read++;
                    }
                }
                serverPrepared &= up.unwrap(PGStatement.class).isUseServerPrepare();
                serverPrepared &= sel.unwrap(PGStatement.class).isUseServerPrepare();
            }
            // A scatter aggregate, prepared on every cluster.
            String agg = "";
            try (PreparedStatement st = c.prepareStatement("SELECT count(*), sum(amount), max(placed) FROM orders WHERE id <= ? AND (? OR amount >= ?)")) {
                for (int i = 1; i <= 12; i++) {
                    int upTo = i * 1000;
                    st.setInt(1, upTo);
                    st.setBoolean(2, i % 2 == 0);
                    st.setBigDecimal(3, new BigDecimal("500.00"));
                    long want = 0;
                    BigDecimal sum = BigDecimal.ZERO.setScale(2);
                    OffsetDateTime wantMax = null; // the last note written that the WHERE keeps
                    for (long id = 1; id <= upTo; id++) {
                        if (i % 2 == 0 || amount(id).compareTo(new BigDecimal("500.00")) >= 0) {
                            want++;
                            sum = sum.add(amount(id));
                            if (id % 7 == 0 && id <= 84) {
                                wantMax = base.plusDays(id / 7);
                            }
                        }
                    }
                    try (ResultSet rs = st.executeQuery()) {
                        check(rs.next(), "aggregate " + i + ": no row");
                        check(rs.getLong(1) == want, "aggregate " + i + ": count " + rs.getLong(1) + ", want " + want);
                        check(rs.getBigDecimal(2).equals(sum), "aggregate " + i + ": sum " + rs.getBigDecimal(2) + ", want " + sum);
                        OffsetDateTime max = rs.getObject(3, OffsetDateTime.class);
                        check(wantMax == null ? max == null : max != null && max.isEqual(wantMax), "aggregate " + i + ": max(placed) " + max + ", want " + wantMax);
                        agg = rs.getLong(1) + "/" + rs.getBigDecimal(2);
                        check(!rs.next(), "aggregate " + i + ": two rows");
                    }
                }
                serverPrepared &= st.unwrap(PGStatement.class).isUseServerPrepare();
            }
            // A GROUP BY the proxy merges, with a column it computes
            // (an interval) after an int8 one: binary and text results in
            // one row.
            String groups = "";
            try (PreparedStatement st = c.prepareStatement("SELECT id % ? AS parity, count(*), max(placed) - min(placed) FROM orders WHERE placed IS NOT NULL GROUP BY 1 ORDER BY 1")) {
                for (int i = 1; i <= 12; i++) {
                    st.setInt(1, 2);
                    StringBuilder b = new StringBuilder();
                    try (ResultSet rs = st.executeQuery()) {
                        while (rs.next()) {
                            b.append(b.length() > 0 ? "," : "").append(rs.getLong(1)).append(':').append(rs.getLong(2)).append(':').append(rs.getString(3));
                        }
                    }
                    check(groups.isEmpty() || groups.equals(b.toString()), "groups run " + i + ": " + b + ", before " + groups);
                    groups = b.toString();
                }
                serverPrepared &= st.unwrap(PGStatement.class).isUseServerPrepare();
            }
            return "updated=" + updated + " read=" + read + " last=" + agg + " groups=" + groups + " server_prepared=" + serverPrepared;
        }
    }

    // batch inserts 500 rows with reWriteBatchedInserts=true (pgjdbc sends
    // multi-row INSERTs, each row to its own shard), in a transaction, and
    // deletes them again.
    static String batch() throws SQLException {
        try (Connection c = connect(true)) {
            c.setAutoCommit(false);
            int batched = 0;
            try (PreparedStatement st = c.prepareStatement("INSERT INTO orders (id, customer_id, amount, note) VALUES (?, ?, ?, ?)")) {
                for (int i = 1; i <= 500; i++) {
                    st.setLong(1, rows + i);
                    st.setLong(2, i % 50 + 1);
                    st.setBigDecimal(3, BigDecimal.valueOf(i * 100 + 25, 2));
                    st.setString(4, "batch " + i);
                    st.addBatch();
                }
                for (int r : st.executeBatch()) {
                    check(r == 1 || r == Statement.SUCCESS_NO_INFO, "batch: update count " + r);
                    batched++;
                }
            }
            c.commit();
            String sum;
            try (Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT count(*), sum(amount), count(DISTINCT customer_id) FROM orders WHERE note LIKE 'batch %'")) {
                check(rs.next(), "batch: no count");
                sum = "count=" + rs.getLong(1) + " sum=" + rs.getBigDecimal(2) + " customers=" + rs.getLong(3);
            }
            c.commit();
            int deleted;
            try (Statement st = c.createStatement()) {
                deleted = st.executeUpdate("DELETE FROM orders WHERE id > " + rows);
            }
            c.commit();
            return "batched=" + batched + " " + sum + " deleted=" + deleted;
        }
    }

    // plain runs ordinary statements: a scatter aggregate, a point read, an
    // UPDATE on one customer undone by a second, an UPDATE of every shard
    // rolled back.
    static String plain() throws SQLException {
        try (Connection c = connect(false); Statement st = c.createStatement()) {
            String agg;
            try (ResultSet rs = st.executeQuery("SELECT count(*), sum(id), min(amount), max(amount) FROM orders")) {
                check(rs.next(), "plain: no aggregate");
                agg = "count=" + rs.getLong(1) + " sum=" + rs.getLong(2) + " min=" + rs.getBigDecimal(3) + " max=" + rs.getBigDecimal(4);
            }
            int point = 0;
            try (ResultSet rs = st.executeQuery("SELECT id, amount FROM orders WHERE customer_id = 8 AND id = 57")) {
                while (rs.next()) {
                    check(rs.getLong(1) == 57 && rs.getBigDecimal(2).equals(amount(57)), "plain: point read " + rs.getLong(1));
                    point++;
                }
            }
            int up = st.executeUpdate("UPDATE orders SET amount = amount + 1 WHERE customer_id = 3");
            int down = st.executeUpdate("UPDATE orders SET amount = amount - 1 WHERE customer_id = 3");
            c.setAutoCommit(false);
            int all = st.executeUpdate("UPDATE orders SET amount = 0");
            c.rollback();
            c.setAutoCommit(true);
            long zero;
            try (ResultSet rs = st.executeQuery("SELECT count(*) FROM orders WHERE amount = 0")) {
                check(rs.next(), "plain: no count");
                zero = rs.getLong(1);
            }
            return agg + " point=" + point + " updated=" + up + "," + down + " rolled_back=" + all + " zero=" + zero;
        }
    }
}
